// The notes window (demos/deck/notes.py): the current slide's notes, rendered, with the answers to
// its question; it follows the slideshow over the BroadcastChannel "jitdeck-notes"
// (assets/labextension/jitdeck-notes tells it where the slideshow is).
(function () {
  "use strict";
  var MARK = "/jitdeck/notes/";
  var at = window.location.pathname.indexOf(MARK);
  var base = window.location.pathname.slice(0, at + 1);
  var path = decodeURIComponent(window.location.pathname.slice(at + MARK.length));
  var channel = typeof BroadcastChannel !== "undefined" ? new BroadcastChannel("jitdeck-notes") : null;
  var data = null, state = null, fetched = 0, loading = null;
  var opened = Date.now();
  var $ = function (id) { return document.getElementById(id); };

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; });
  }

  function load() {
    if (loading) return loading;
    var url = base + "jitdeck/notes-data/" + path.split("/").map(encodeURIComponent).join("/");
    loading = fetch(url, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.json(); })
      .then(function (d) { data = d; fetched = Date.now(); loading = null; render(); return d; })
      .catch(function (e) { loading = null; $("jitdeck-notes-where").textContent = "cannot read the notes: " + e; });
    return loading;
  }

  function question(slide) {
    var box = $("jitdeck-notes-question");
    var qs = (slide.questions || []);
    var live = (state && state.answers) || [];
    if (!slide.live.length) { box.hidden = true; box.innerHTML = ""; return; }
    var html = "";
    if (!qs.length) {
      html = data && data.answers_ready ? "" :
        "<div class='pending'>" + esc(data && data.answers_error ? data.answers_error : "reading the answer sheet…") + "</div>";
    }
    qs.forEach(function (q) {
      html += "<div class='q'>" + esc(q.question) + "</div><ol>" +
        q.choices.map(function (c) { return "<li>" + esc(c) + "</li>"; }).join("") + "</ol>";
      var here = live.filter(function (a) { return !a.key || a.key === q.key; })[0];
      if (here) html += "<div class='answer'>Live panel — " + esc(here.line.replace(/^Answer — /, "")) + "</div>";
      else if (q.warm) html += "<div class='answer'>" + esc(q.warm.label) + ": " + esc(q.warm.said) + "</div>";
      else html += "<div class='pending'>This machine: run the cell; its answer shows here once measured.</div>";
      if (q.record && !(here && here.line.indexOf(q.record.label + ":") >= 0))  // the live line quotes it already
        html += "<div class='answer'>" + esc(q.record.label) + ": " + esc(q.record.said) + "</div>";
      else if (!q.record) html += "<div class='pending'>No committed record answers it.</div>";
    });
    box.innerHTML = html;
    box.hidden = !html;
  }

  function render() {
    if (!data || !state) return;
    if (data.error) { $("jitdeck-notes-where").textContent = data.error; return; }
    var slides = data.slides, i = -1;
    for (var k = 0; k < slides.length; k++) if (slides[k].h === state.h && slides[k].v === state.v) { i = k; break; }
    if (i < 0) { $("jitdeck-notes-where").textContent = "slide " + state.num + " is not in " + path + " as saved"; return; }
    var slide = slides[i];
    document.body.setAttribute("data-h", state.h);
    document.body.setAttribute("data-v", state.v);
    $("jitdeck-notes-where").textContent = path.split("/").pop().replace(/\.ipynb$/, "") + " · slide " + slide.number + "/" + slides.length;
    $("jitdeck-notes-title").textContent = slide.title || "(untitled slide)";
    $("jitdeck-notes-body").innerHTML = slide.notes_html ||
      "<p class='jitdeck-notes-empty'>No notes on this slide.</p>";
    question(slide);
    var next = slides[i + 1];
    $("jitdeck-notes-next").textContent = next ? "Next: " + (next.title || "slide " + next.number) : "Last slide of this part";
    if (window.MathJax && window.MathJax.typesetPromise) window.MathJax.typesetPromise();
  }

  if (channel) {
    channel.onmessage = function (ev) {
      var msg = ev.data || {};
      if (msg.type !== "state") return;
      if (msg.path !== path) {  // the slideshow went on to another part: follow it
        path = msg.path;
        data = null;
        window.history.replaceState(null, "", base + "jitdeck/notes/" + path.split("/").map(encodeURIComponent).join("/"));
      }
      state = msg;
      // the notebook may have been saved since (a slide fixed in JupyterLab): read it again now and then
      if (!data || Date.now() - fetched > 5000 || !data.answers_ready) load(); else render();
    };
  }

  function hello() {
    if (!state && channel) channel.postMessage({type: "hello"});
  }

  document.addEventListener("keydown", function (ev) {
    var dir = {ArrowRight: "next", ArrowDown: "next", PageDown: "next", " ": "next",
               ArrowLeft: "prev", ArrowUp: "prev", PageUp: "prev"}[ev.key];
    if (!dir || !channel) return;
    ev.preventDefault();
    channel.postMessage({type: "go", dir: dir, path: path});
  });

  setInterval(function () {
    var s = Math.floor((Date.now() - opened) / 1000);
    $("jitdeck-notes-clock").textContent = Math.floor(s / 60) + ":" + ("0" + (s % 60)).slice(-2);
    hello();
    if (data && !data.answers_ready && !data.answers_error && Date.now() - fetched > 2500) load();
  }, 1000);
  load();
  hello();
  if (!channel) $("jitdeck-notes-where").textContent = "this browser has no BroadcastChannel: the notes cannot follow the slideshow";
})();
