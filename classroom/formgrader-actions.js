/* The Formgrader's action icons say what they do (classroom/class_env.py appends this to
   nbgrader's formgrader/static/js/utils.js, after formgrader-names.js). After Release, Manage
   Assignments' Release column held a bare ✖ (nbgrader's "unrelease" button, the glyphicon
   "remove"), which an instructor read as "the release failed". That one gets a visible
   "Unrelease" beside it and a tooltip; every other action icon of the tables gets a tooltip
   (nbgrader's have none), also in rows drawn later. */
;(function () {
  var TIPS = {
    "glyphicon-pencil": "Edit the due date",
    "glyphicon-education": "Generate the student version",
    "glyphicon-search": "Preview the student version",
    "glyphicon-cloud-upload": "Release to the students",
    "glyphicon-remove": "Released. Click to unrelease: take the set back from the exchange, " +
      "so students can no longer fetch it",
    "glyphicon-cloud-download": "Collect the submissions",
    "glyphicon-flash": "Autograde",
    "glyphicon-comment": "Generate feedback",
    "glyphicon-envelope": "Release feedback to the students"
  };
  function label(root) {
    if (!root.querySelectorAll) { return; }
    [].forEach.call(root.querySelectorAll("td a > .glyphicon"), function (icon) {
      var link = icon.parentNode, tip;
      for (var name in TIPS) {
        if (icon.classList.contains(name)) { tip = TIPS[name]; }
      }
      if (!tip || link.getAttribute("title")) { return; }
      link.setAttribute("title", tip);
      link.setAttribute("aria-label", tip);
      if (icon.classList.contains("glyphicon-remove") && !link.querySelector(".mha-action")) {
        var word = document.createElement("span");
        word.className = "mha-action";
        word.textContent = " Unrelease";
        link.appendChild(word);
      }
    });
  }
  function start() {
    label(document.body);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        [].forEach.call(change.addedNodes, function (node) {
          var el = node.nodeType === 1 ? node : node.parentNode;
          if (el) { label(el.closest && el.closest("tr") || el); }
        });
      });
    }).observe(document.body, {childList: true, subtree: true});
  }
  if (document.body) { start(); } else { document.addEventListener("DOMContentLoaded", start); }
})();
