"""Display equations: recognised by their math fonts and symbols, rewritten as LaTeX where it is recoverable."""

from __future__ import annotations

import re

from papervault.parse.layout import Block, Line

MATH_FONT_HINTS = ("cmmi", "cmsy", "cmex", "msam", "msbm", "symbol", "math", "stix", "cmbsy", "rsfs", "eufm",
                   "mt extra", "lmmath", "euler", "mathematicalpi", "txsy", "pxsy", "esint")
GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "ϵ": r"\epsilon",
         "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta", "ι": r"\iota", "κ": r"\kappa",
         "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma",
         "τ": r"\tau", "υ": r"\upsilon", "φ": r"\phi", "ϕ": r"\phi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega",
         "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi",
         "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega"}
SYMBOLS = {"≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv", "∼": r"\sim",
           "∝": r"\propto", "×": r"\times", "·": r"\cdot", "⋅": r"\cdot", "÷": r"\div", "±": r"\pm",
           "∓": r"\mp", "∞": r"\infty", "∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∂": r"\partial",
           "∇": r"\nabla", "√": r"\sqrt", "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "⊆": r"\subseteq",
           "⊃": r"\supset", "⊇": r"\supseteq", "∪": r"\cup", "∩": r"\cap", "∅": r"\emptyset", "∀": r"\forall",
           "∃": r"\exists", "¬": r"\neg", "∧": r"\land", "∨": r"\lor", "→": r"\rightarrow", "←": r"\leftarrow",
           "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow",
           "↦": r"\mapsto", "⊢": r"\vdash", "⊨": r"\models", "⊤": r"\top", "⊥": r"\bot", "⟨": r"\langle",
           "⟩": r"\rangle", "⌈": r"\lceil", "⌉": r"\rceil", "⌊": r"\lfloor", "⌋": r"\rfloor", "∗": "*",
           "−": "-", "…": r"\ldots", "⋯": r"\cdots", "∘": r"\circ", "⊕": r"\oplus", "⊗": r"\otimes",
           "ℓ": r"\ell", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}", "′": "'", "‖": r"\|",
           "∣": r"\mid", "≪": r"\ll", "≫": r"\gg", "≔": ":=", "⊑": r"\sqsubseteq", "⊔": r"\sqcup"}
_MATHCHARS = set(GREEK) | set(SYMBOLS) | set("=+<>^_{}|/")
_EQNUM = re.compile(r"\s*\((\d+(?:\.\d+)?[a-z]?)\)\s*$")


_math_fonts: dict[str, bool] = {}


def _is_math_font(font: str) -> bool:
    hit = _math_fonts.get(font)
    if hit is None:
        f = font.lower()
        hit = _math_fonts[font] = any(h in f for h in MATH_FONT_HINTS)
    return hit


def math_share(block: Block) -> float:
    """Fraction of the block's characters set in a math font or being math symbols."""
    total = math = 0
    for ln in block.lines:
        for s in ln.spans:
            n = len(s.text.strip())
            total += n
            if _is_math_font(s.font):
                math += n
            else:
                math += sum(map(_MATHCHARS.__contains__, s.text))
    return math / total if total else 0.0


def is_display_equation(block: Block, body_size: float, column: tuple[float, float]) -> bool:
    """A short block, mostly math, set apart from the text (centred or numbered) is a display equation."""
    text = block.text
    if not text or len(block.lines) > 8 or len(text) > 400:
        return False
    words = re.findall(r"[A-Za-z]{4,}", text)
    share = math_share(block)
    if share < 0.35 or len(words) > 6 and share < 0.6:
        return False
    numbered = bool(_EQNUM.search(text))
    x0, _, x1, _ = block.bbox
    width = column[1] - column[0]
    centred = x0 - column[0] > 0.08 * width and column[1] - x1 > 0.05 * width
    return numbered or centred or share > 0.7


def to_latex(block: Block) -> tuple[str, str]:
    """(LaTeX body, equation number or "") for a display equation block."""
    rows = [_line_latex(ln) for ln in block.lines]
    text = " \\\\ ".join(r for r in rows if r)
    number = ""
    m = _EQNUM.search(text)
    if m:
        number, text = m.group(1), text[: m.start()].rstrip()
    text = re.sub(r"\s+", " ", text).strip()
    return text, number


def _line_latex(line: Line) -> str:
    out: list[str] = []
    base = line.size
    base_y = line.bbox[3]
    for s in line.spans:
        t = "".join(GREEK.get(ch, SYMBOLS.get(ch, _escape(ch))) + (" " if ch in GREEK or ch in SYMBOLS and
                    SYMBOLS[ch].startswith("\\") else "") for ch in s.text)
        if not t.strip():
            out.append(" ")
            continue
        small = s.size < base * 0.85
        if small and (s.superscript or s.bbox[3] < base_y - 0.25 * base):
            out.append("^{" + t.strip() + "}")
        elif small and s.bbox[3] > base_y - 0.05 * base and s.bbox[1] > line.bbox[1] + 0.2 * base:
            out.append("_{" + t.strip() + "}")
        else:
            out.append(t)
    return "".join(out).strip()


def _escape(ch: str) -> str:
    return {"%": r"\%", "#": r"\#", "&": r"\&", "$": r"\$", "~": r"\sim "}.get(ch, ch)
