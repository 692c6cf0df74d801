/* Names in the Formgrader's tables break only after an underscore (classroom/class_env.py
   appends this to nbgrader's formgrader/static/js/utils.js, which every Formgrader page loads).
   The tables' cells wrap anywhere (formgrader-tables.css), and a set's name broke inside a
   word: "ex02_scores_and_so|ftmax" at 1440 x 900, "ex02_scores|_and_softma|x" at 1024 x 768.
   Each text of a table cell gets a <wbr> after each underscore, also in rows drawn later. */
;(function () {
  var INNER = /_(?=.)/;  // an underscore with text after it: not yet split here
  function soften(root) {
    if (!root.querySelectorAll) { return; }
    var cells = root.matches && root.matches("td") ? [root] : [];
    cells = cells.concat([].slice.call(root.querySelectorAll("td")));
    if (!cells.length && root.closest) {
      var cell = root.closest("td");
      if (cell) { cells = [cell]; }
    }
    cells.forEach(function (cell) {
      var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), texts = [], t;
      while ((t = walker.nextNode())) { if (INNER.test(t.data)) { texts.push(t); } }
      texts.forEach(function (text) {
        var pieces = text.data.split(/(?<=_)/), frag = document.createDocumentFragment();
        pieces.forEach(function (piece, i) {
          frag.appendChild(document.createTextNode(piece));
          if (i < pieces.length - 1) { frag.appendChild(document.createElement("wbr")); }
        });
        text.parentNode.replaceChild(frag, text);
      });
    });
  }
  function start() {
    soften(document.body);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        [].forEach.call(change.addedNodes, function (node) {
          soften(node.nodeType === 1 ? node : node.parentNode || document.body);
        });
      });
    }).observe(document.body, {childList: true, subtree: true});
  }
  if (document.body) { start(); } else { document.addEventListener("DOMContentLoaded", start); }
})();
