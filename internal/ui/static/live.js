// syncd ui live updates: the page subscribes to /events for itself and,
// when the server says what it shows changed, fetches itself again and
// swaps in the new <main>. Without JavaScript the page is complete; it is
// only not refreshed.
"use strict";
(function () {
  if (!window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var page = location.pathname + location.search;
  var source = new EventSource("/events?page=" + encodeURIComponent(page));
  var busy = false;
  function refresh() {
    if (busy) {
      return;
    }
    busy = true;
    fetch(page, { credentials: "same-origin", cache: "no-store" })
      .then(function (resp) { return resp.ok ? resp.text() : null; })
      .then(function (text) {
        if (text === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        var current = document.querySelector("main");
        if (fresh && current) {
          current.replaceWith(document.importNode(fresh, true));
          document.body.setAttribute("data-updated", new Date().toISOString());
        }
      })
      .finally(function () { busy = false; });
  }
  source.addEventListener("changed", refresh);
})();
