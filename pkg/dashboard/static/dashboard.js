// adc rollout dashboard: re-fetch the page every few seconds and swap #content in place.
// The page is complete without this script; it only keeps it fresh. Nothing is built from
// strings here: the new content is the server's own escaped HTML, parsed as a document.
(function () {
  "use strict";
  document.documentElement.classList.remove("no-js");
  document.documentElement.classList.add("js");
  var seconds = parseInt(document.body.getAttribute("data-refresh-seconds"), 10) || 5;
  var status = document.getElementById("refresh-status");
  var busy = false;

  function show(text, stale) {
    if (!status) { return; }
    status.textContent = text;
    status.classList.toggle("stale", !!stale);
  }

  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(window.location.pathname + window.location.search, { cache: "no-store", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        return resp.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("content");
        var current = document.getElementById("content");
        if (fresh && current) {
          current.replaceWith(document.importNode(fresh, true));
        }
        show("live · updated " + new Date().toLocaleTimeString(), false);
      })
      .catch(function (err) {
        show("refresh failed (" + err.message + "); retrying", true);
      })
      .then(function () { busy = false; });
  }

  show("live · every " + seconds + " s", false);
  window.setInterval(refresh, seconds * 1000);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { refresh(); }
  });
})();
