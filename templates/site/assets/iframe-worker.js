/* papervault: run the theme's search worker (mkdocs-material's or Zensical's) when the site is opened from disk.
 *
 * Chromium refuses `new Worker("file:///...")` (a file page has an opaque origin). This replaces `Worker`, on
 * file:// pages only, with one that runs the worker's script in a hidden iframe of the same page; messages go
 * through the iframe's window. Material's offline plugin expects such a shim in `extra.polyfills` (its default
 * fetches one from a CDN; this file is the site's own, so nothing is loaded from outside). The class is named
 * IFrameWorker because Material's search worker looks for that name to locate its lunr language files.
 * Messages are copied into the receiving window (structuredClone) and delivered as tasks, as a worker's are:
 * Zensical's search worker checks the index it is given with the frame's own Object and Array, and its page
 * code would otherwise handle an answer inside the call that asked the question (and ask again, forever).
 */
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  function IFrameWorker(url) {
    var target = document.createDocumentFragment();   // an EventTarget for the page's listeners
    var self = this, ready = false, queue = [];
    this.onmessage = null;
    this.onerror = null;
    this.addEventListener = target.addEventListener.bind(target);
    this.removeEventListener = target.removeEventListener.bind(target);
    this.dispatchEvent = target.dispatchEvent.bind(target);

    var frame = document.createElement("iframe");
    frame.setAttribute("aria-hidden", "true");
    frame.setAttribute("tabindex", "-1");
    frame.style.display = "none";
    (document.body || document.documentElement).appendChild(frame);
    this.frame = frame;
    var win = frame.contentWindow;

    // Inside the frame, `postMessage(data)` answers the page, as a worker's does.
    function copy(into, data) {
      try { return into.structuredClone(data); } catch (e) { return data; }
    }
    // Delivered as a task, never inside the sender's call: the page's code (Zensical's signals) reads the
    // answer in a handler that must not run inside the effect that posted the question.
    win.postMessage = function (data) {
      var ev = new MessageEvent("message", { data: copy(window, data) });
      setTimeout(function () {
        self.dispatchEvent(ev);
        if (typeof self.onmessage === "function") self.onmessage(ev);
      }, 0);
    };
    // A worker's importScripts, as script elements of the frame (Material awaits the result).
    win.importScripts = function () {
      var urls = Array.prototype.slice.call(arguments);
      return urls.reduce(function (done, src) {
        return done.then(function () { return load(src); });
      }, Promise.resolve());
    };
    function load(src) {
      return new Promise(function (resolve, reject) {
        var s = win.document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error("cannot load " + src)); };
        win.document.head.appendChild(s);
      });
    }
    load(new URL(url, location.href).href).then(function () {
      ready = true;
      queue.splice(0).forEach(function (data) { self.postMessage(data); });
    }, function (err) {
      var ev = new ErrorEvent("error", { message: String(err) });
      self.dispatchEvent(ev);
      if (typeof self.onerror === "function") self.onerror(ev);
    });

    this.postMessage = function (data) {
      if (!ready) { queue.push(data); return; }
      var ev = new win.MessageEvent("message", { data: copy(win, data) });
      setTimeout(function () { win.dispatchEvent(ev); }, 0);
    };
    this.terminate = function () { frame.remove(); };
  }

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
