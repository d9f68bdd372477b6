/* The deck's own lab extension (docs/architecture.md, "The notes window").
 *
 * Loaded by JupyterLab and by jupyterlab_rise's slideshow page as a federated extension: this file
 * is the container JupyterLab's loader asks for (window._JUPYTERLAB[name].init / .get), written by
 * hand because the plugin needs nothing from JupyterLab's shared modules. It acts only in the
 * slideshow (a /rise/ page):
 *   - key t (RISE's "open speaker notes window") opens the deck's notes window instead of
 *     reveal.js's speaker view, whose notes are the cells' raw markdown and whose preview frames
 *     each load the whole slideshow again;
 *   - on every move, and whenever a notes window asks, it says where the slideshow is over the
 *     BroadcastChannel "jitdeck-notes": the part, the slide (h, v), its number, and the answer a
 *     live panel on it measured (the panel's hidden .jitdeck-lectern line);
 *   - a notes window may ask it to go to the next or previous slide (its arrow keys): it presses
 *     the slideshow's own arrows.
 */
(function () {
  "use strict";
  var NAME = "jitdeck-notes";
  var CHANNEL = "jitdeck-notes";

  function slideshowPath() {
    var m = window.location.pathname.match(/\/rise\/(.+\.ipynb)$/);
    return m ? decodeURIComponent(m[1]) : null;
  }

  function baseUrl() {
    try {
      var cfg = JSON.parse(document.getElementById("jupyter-config-data").textContent);
      return cfg.baseUrl || "/";
    } catch (e) {
      return "/";
    }
  }

  function editing(target) {
    if (!target) return false;
    var tag = (target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || !!target.isContentEditable
      || !!(target.closest && target.closest(".cm-editor, .jitdeck-panel input, .jitdeck-panel textarea"));
  }

  // The slide on screen: reveal's indices (h: a slide, v: a sub-slide under it), as RISE built them.
  function where(path) {
    var top = Array.prototype.slice.call(document.querySelectorAll(".reveal .slides > section"));
    var h = -1;
    for (var i = 0; i < top.length; i++) if (top[i].classList.contains("present")) { h = i; break; }
    if (h < 0) return null;
    var sec = top[h], v = 0;
    var inner = Array.prototype.slice.call(sec.querySelectorAll(":scope > section"));
    if (inner.length) {
      for (var j = 0; j < inner.length; j++) if (inner[j].classList.contains("present")) { v = j; break; }
      sec = inner[v];
    }
    var answers = Array.prototype.slice.call(sec.querySelectorAll(".jitdeck-lectern"))
      .map(function (e) { return {key: e.querySelector("[data-key]") ? e.querySelector("[data-key]").getAttribute("data-key") : "",
                                  line: (e.textContent || "").trim()}; })
      .filter(function (a) { return a.line; });
    var num = (document.querySelector(".reveal .slide-number") || {}).textContent || "";
    return {type: "state", path: path, h: h, v: v, num: num.replace(/\s+/g, ""), answers: answers};
  }

  function start() {
    var path = slideshowPath();
    if (!path || typeof BroadcastChannel === "undefined") return;
    var channel = new BroadcastChannel(CHANNEL);
    var last = "";
    function tell(force) {
      var state = where(path);
      if (!state) return;
      var text = JSON.stringify(state);
      if (force || text !== last) {
        last = text;
        channel.postMessage(state);
      }
    }
    channel.onmessage = function (ev) {
      var msg = ev.data || {};
      if (msg.type === "hello") tell(true);
      if (msg.type === "go" && msg.path === path) {
        var arrow = document.querySelector(".reveal .controls .navigate-" + (msg.dir === "prev" ? "left" : "right"));
        if (arrow) arrow.click();
      }
    };
    // on every move: reveal changes the classes of the slides; a panel's answer comes later
    setInterval(function () { tell(false); }, 250);
    // t: the notes window, before JupyterLab's shortcuts see the key (this listener is the window's,
    // in the capture phase: it runs before the document's)
    window.addEventListener("keydown", function (ev) {
      if ((ev.key !== "t" && ev.key !== "T") || ev.ctrlKey || ev.metaKey || ev.altKey || editing(ev.target)) return;
      if (!document.querySelector(".reveal .slides section.present")) return;
      ev.preventDefault();
      ev.stopImmediatePropagation();
      var url = baseUrl().replace(/\/?$/, "/") + "jitdeck/notes/" + path.split("/").map(encodeURIComponent).join("/");
      var win = window.open(url, "jitdeck-notes", "width=1100,height=820");
      if (win) win.focus();
      tell(true);
    }, true);
  }

  var plugin = {
    id: NAME + ":plugin",
    autoStart: true,
    activate: function () { start(); }
  };

  var scope = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  scope[NAME] = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== "./extension") return Promise.reject(new Error(NAME + " has no module " + module));
      return Promise.resolve(function () { return {__esModule: true, default: [plugin]}; });
    }
  };
})();
