// memtrail web: keyboard navigation and the copy button. Loaded from this server only (the
// Content-Security-Policy allows no inline script); reads the page, never transcript text as code.
(function () {
  "use strict";

  // The items `j` / `k` move between: search hits, else a session's messages, else table rows' links.
  function items() {
    var hits = document.querySelectorAll("a.hit-link");
    if (hits.length) return Array.prototype.slice.call(hits);
    var msgs = document.querySelectorAll("article.msg");
    if (msgs.length) return Array.prototype.slice.call(msgs);
    return Array.prototype.slice.call(document.querySelectorAll("table.sessions td a"));
  }

  function move(step) {
    var list = items();
    if (!list.length) return;
    var i = list.indexOf(document.activeElement);
    if (i < 0) {
      // Inside a message (a summary, a link): start from that message.
      for (var k = 0; k < list.length; k++) {
        if (list[k].contains(document.activeElement)) { i = k; break; }
      }
    }
    var next = i < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, i + step));
    list[next].focus();
    list[next].scrollIntoView({ block: "nearest" });
  }

  function typing(el) {
    if (!el) return false;
    var t = el.tagName;
    return t === "INPUT" || t === "TEXTAREA" || t === "SELECT" || el.isContentEditable;
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape" && typing(document.activeElement)) {
      // Leave the field as it is (a search box would clear itself, and the results with it).
      e.preventDefault();
      document.activeElement.blur();
      return;
    }
    if (typing(document.activeElement)) return;
    if (e.key === "/") {
      var q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); q.select(); }
    } else if (e.key === "j") {
      e.preventDefault(); move(1);
    } else if (e.key === "k") {
      e.preventDefault(); move(-1);
    }
  });

  function ready() {
    // A search hit opened this page: show and focus its message.
    var at = document.querySelector("article[data-at]");
    if (at) { at.scrollIntoView({ block: "start" }); at.focus({ preventScroll: true }); }
    var copy = document.querySelector("button[data-copy]");
    if (copy) {
      copy.addEventListener("click", function () {
        var src = document.getElementById(copy.getAttribute("data-copy"));
        var said = document.getElementById("copied");
        var done = function () { if (said) said.textContent = "Copied."; };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(src.value).then(done, function () { src.select(); document.execCommand("copy"); done(); });
        } else {
          src.select(); document.execCommand("copy"); done();
        }
      });
    }
  }
  // A session's last page follows it: new messages come as server-sent events of their HTML,
  // which the server rendered and escaped; parsed in a <template> (its scripts never run, and
  // the Content-Security-Policy allows none).
  function live() {
    var section = document.querySelector("section.messages[data-live]");
    if (!section || !window.EventSource) return;
    var src = new EventSource(section.getAttribute("data-live"));
    src.addEventListener("messages", function (e) {
      var t = document.createElement("template");
      t.innerHTML = e.data;
      var empty = section.querySelector("p.empty");
      if (empty) empty.remove();
      section.appendChild(t.content);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", live);
  else live();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
