// MathJax 3, served from this site (assets/mathjax), never from a CDN. pymdownx.arithmatex (generic mode)
// wraps formulas in \( \) and \[ \] inside elements of class "arithmatex"; only those are typeset.
// ui/safe (MathJax's safe extension) filters what TeX may put into the page: \href only to http(s) and
// relative URLs (no javascript:), \style only with harmless properties (no url()), \class and \cssId only with
// the mjx- prefix, so a formula in a paper cannot run script, load from elsewhere or replace an element's id.
window.MathJax = {
  loader: { load: ["ui/safe"] },
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    menuOptions: { settings: { assistiveMml: false } }
  }
};
// Material's instant navigation replaces the page without reloading scripts: typeset again after each.
if (typeof document$ !== "undefined") {
  document$.subscribe(function () {
    if (window.MathJax && MathJax.typesetPromise) {
      // the SVG output has a font cache, not the CommonHTML output's clearCache()
      if (MathJax.startup.output.clearCache) MathJax.startup.output.clearCache();
      else if (MathJax.startup.output.clearFontCache) MathJax.startup.output.clearFontCache();
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
