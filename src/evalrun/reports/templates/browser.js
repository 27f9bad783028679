// evalrun item browser: pages through the rows embedded as JSON. Every value is
// placed with textContent / createElement, never as markup. Layouts are
// documented in reports/view/browser.py.
(function () {
  "use strict";
  var dataEl = document.getElementById("browser-data");
  var root = document.getElementById("browser");
  if (!dataEl || !root) { return; }
  var D = JSON.parse(dataEl.textContent);
  var NC = Math.max(D.candidates.length, 1);
  var PAGE = 50;
  var UNANSWERED = D.outcomes.indexOf("unanswered");
  var OK = { correct: true, correct_absent: true };
  var $ = function (id) { return document.getElementById(id); };
  var selCand = $("f-cand"), selPack = $("f-pack"), selField = $("f-field"), selOutcome = $("f-outcome");
  var chkFlip = $("f-flipped"), tbody = $("item-rows"), count = $("count"), pageLabel = $("page");
  var visible = [], page = 0, textsPromise = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function options(select, labels) {
    labels.forEach(function (label, i) {
      var o = el("option", null, label);
      o.value = String(i);
      select.appendChild(o);
    });
  }
  options(selCand, D.candidates);
  options(selPack, D.packs);
  options(selField, D.fields.map(function (f, i) { return D.kinds[i] ? f + " (" + D.kinds[i] + ")" : f; }));
  options(selOutcome, D.outcomes);
  chkFlip.checked = D.flips > 0;

  // a row's view for one candidate: {value, outcome, sub, flip, ops} or null when it has no answer
  function baseValue(row) { return row[3] === 0 ? row[2] : row[3]; }
  function cellOf(row, c) {
    var cell = row[7][c];
    if (cell === 0) { return { value: baseValue(row), outcome: row[4], sub: row[5], flip: 0, ops: row[6] }; }
    if (cell === null || cell === undefined) { return null; }
    return { value: cell[0], outcome: cell[1], sub: cell[2], flip: cell[3], ops: cell[4] };
  }

  function apply() {
    var c0 = selCand.value === "" ? 0 : +selCand.value;
    var c1 = selCand.value === "" ? D.candidates.length : c0 + 1;
    var pk = selPack.value === "" ? -1 : +selPack.value;
    var fd = selField.value === "" ? -1 : +selField.value;
    var oc = selOutcome.value === "" ? -1 : +selOutcome.value;
    var flipOnly = chkFlip.checked;
    visible = [];
    for (var r = 0; r < D.rows.length; r++) {
      var row = D.rows[r];
      if (fd >= 0 && row[1] !== fd) { continue; }
      if (pk >= 0 && D.items[row[0]][1] !== pk) { continue; }
      for (var c = c0; c < c1; c++) {
        var cell = row[7][c];
        var flip = cell ? cell[3] : 0;
        if (flipOnly && !flip) { continue; }
        var out = cell === 0 ? row[4] : (cell ? cell[1] : UNANSWERED);
        if (oc >= 0 && out !== oc) { continue; }
        visible.push(r * NC + c);
      }
    }
    page = 0;
    render();
  }

  // text with the diff marks of one side: side 0 marks the gold (a), side 1 the value (b)
  function marked(text, ops, side, other) {
    var frag = document.createDocumentFragment();
    if (text === null || text === undefined) { frag.appendChild(el("span", "none", "∅ none")); return frag; }
    if (!ops) { frag.appendChild(document.createTextNode(text)); return frag; }
    var pos = 0;
    for (var i = 0; i < ops.length; i += 5) {
      var s = side ? ops[i + 3] : ops[i + 1], e = side ? ops[i + 4] : ops[i + 2];
      if (s > pos) { frag.appendChild(document.createTextNode(text.slice(pos, s))); }
      if (e > s) {
        frag.appendChild(el("mark", side ? "d-add" : "d-del", text.slice(s, e)));
      } else {
        var gap = el("span", "d-gap", "‸");
        var gone = side ? other.slice(ops[i + 1], ops[i + 2]) : other.slice(ops[i + 3], ops[i + 4]);
        gap.title = (side ? "dropped here: " : "inserted here: ") + gone;
        frag.appendChild(gap);
      }
      pos = Math.max(pos, e);
    }
    if (pos < text.length) { frag.appendChild(document.createTextNode(text.slice(pos))); }
    return frag;
  }

  function valueCell(value, outcome, sub, ops, gold) {
    var td = el("td", "val");
    td.appendChild(marked(value, ops, 1, gold || ""));
    var name = D.outcomes[outcome];
    td.appendChild(el("span", OK[name] ? "outcome" : "outcome bad", name + (sub ? " · " + D.subcodes[sub] : "")));
    return td;
  }

  function render() {
    tbody.textContent = "";
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    if (page >= pages) { page = pages - 1; }
    var start = page * PAGE, end = Math.min(visible.length, start + PAGE);
    for (var k = start; k < end; k++) {
      var r = Math.floor(visible[k] / NC), c = visible[k] % NC;
      tbody.appendChild(rowElement(r, c));
    }
    count.textContent = visible.length.toLocaleString("en") + " of " + (D.rows.length * D.candidates.length).toLocaleString("en") +
      " field results" + (chkFlip.checked ? " (flipped only)" : "");
    pageLabel.textContent = visible.length ? "rows " + (start + 1) + "–" + end + " · page " + (page + 1) + " of " + pages : "no rows match";
    $("prev").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
  }

  function rowElement(r, c) {
    var row = D.rows[r], item = D.items[row[0]], cell = cellOf(row, c);
    var tr = el("tr");
    tr.dataset.row = String(r);
    tr.appendChild(el("td", null, D.candidates[c]));
    var idCell = el("td");
    idCell.appendChild(el("code", null, item[0]));
    idCell.appendChild(el("span", "outcome", D.packs[item[1]]));
    tr.appendChild(idCell);
    var fieldCell = el("td", null, D.fields[row[1]]);
    fieldCell.appendChild(el("span", "outcome", D.kinds[row[1]]));
    tr.appendChild(fieldCell);
    var goldCell = el("td", "val");
    goldCell.appendChild(marked(row[2], cell && cell.ops, 0, cell && cell.value ? cell.value : ""));
    tr.appendChild(goldCell);
    tr.appendChild(valueCell(baseValue(row), row[4], row[5], row[6], row[2]));
    if (cell) {
      tr.appendChild(valueCell(cell.value, cell.outcome, cell.sub, cell.ops, row[2]));
    } else {
      tr.appendChild(el("td", "none", "no answer in this run"));
    }
    tr.appendChild(el("td", null, cell && cell.sub ? D.subcodes[cell.sub] : ""));
    var flip = cell ? cell.flip : 0;
    tr.appendChild(el("td", flip > 0 ? "flip-harmful" : (flip < 0 ? "flip-helpful" : ""),
      flip > 0 ? "harmful" : (flip < 0 ? "helpful" : "")));
    var btnCell = el("td");
    var btn = el("button", null, "prompt & outputs");
    btn.type = "button";
    btn.setAttribute("aria-expanded", "false");
    btn.addEventListener("click", function () { toggle(tr, btn, r, c); });
    btnCell.appendChild(btn);
    tr.appendChild(btnCell);
    return tr;
  }

  function inflate() {
    if (!textsPromise) {
      textsPromise = new Promise(function (resolve, reject) {
        if (typeof DecompressionStream === "undefined") {
          reject(new Error("this browser cannot unpack the stored texts (no DecompressionStream)"));
          return;
        }
        var bin = atob($("browser-texts").textContent.trim());
        var bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        new Response(stream).text().then(function (t) { resolve(JSON.parse(t)); }, reject);
      });
    }
    return textsPromise;
  }

  function toggle(tr, btn, r, c) {
    var next = tr.nextElementSibling;
    if (next && next.classList.contains("detail")) {
      next.remove();
      btn.setAttribute("aria-expanded", "false");
      return;
    }
    var detail = el("tr", "detail");
    var td = el("td");
    td.colSpan = 9;
    td.appendChild(el("p", "meta", "loading…"));
    detail.appendChild(td);
    tr.after(detail);
    btn.setAttribute("aria-expanded", "true");
    inflate().then(function (stored) {
      td.textContent = "";
      td.appendChild(details(stored, r, c));
    }, function (err) {
      td.textContent = "";
      td.appendChild(el("p", "note", String(err.message || err)));
    });
  }

  // the document with its highlights: the needle or source sentence of this row's field stands out
  function highlighted(text, spans, field) {
    var frag = document.createDocumentFragment(), pos = 0;
    spans.forEach(function (sp) {
      if (sp[0] < pos) { return; }
      if (sp[0] > pos) { frag.appendChild(document.createTextNode(text.slice(pos, sp[0]))); }
      var cls = sp[2] === -2 ? "hl distractor" : (sp[2] === -1 || sp[2] === field ? "hl this" : "hl");
      var m = el("mark", cls, text.slice(sp[0], sp[1]));
      m.title = sp[2] === -2 ? "distractor" : (sp[2] >= 0 ? "source of " + D.fields[sp[2]] : "needle");
      frag.appendChild(m);
      pos = sp[1];
    });
    if (pos < text.length) { frag.appendChild(document.createTextNode(text.slice(pos))); }
    return frag;
  }

  function details(stored, r, c) {
    var row = D.rows[r], item = D.items[row[0]], d = stored.details[row[0]], texts = stored.texts;
    var box = el("div", "detail");
    box.appendChild(el("p", "meta", item[0] + (d[4] ? " · " + d[4] : "")));
    var written = d[7] >= 0 ? JSON.parse(texts[d[7]]) : {};
    if (Object.prototype.hasOwnProperty.call(written, D.fields[row[1]])) {
      box.appendChild(el("p", "as-written", "gold as written: " + written[D.fields[row[1]]]));
    }
    var head = d[0] >= 0 ? texts[d[0]] : "";
    var spans = d[5];
    var mine = spans.filter(function (sp) { return sp[2] === -1 || sp[2] === row[1]; })[0];
    if (mine && head.length > 1500) {
      box.appendChild(el("h4", null, "Around the " + (mine[2] === -1 ? "needle" : "source of " + D.fields[row[1]])));
      var a = Math.max(0, mine[0] - 400), b = Math.min(head.length, mine[1] + 400);
      var local = spans.filter(function (sp) { return sp[0] >= a && sp[1] <= b; })
        .map(function (sp) { return [sp[0] - a, sp[1] - a, sp[2]]; });
      var pre = el("pre");
      pre.appendChild(document.createTextNode(a > 0 ? "…" : ""));
      pre.appendChild(highlighted(head.slice(a, b), local, row[1]));
      pre.appendChild(document.createTextNode(b < head.length ? "…" : ""));
      box.appendChild(pre);
    }
    var doc = el("details");
    doc.open = head.length <= 1500;
    doc.appendChild(el("summary", null, "Prompt: document (" + head.length.toLocaleString("en") + " characters)" +
      (d[6] ? ", an excerpt: " + d[6].toLocaleString("en") + " characters were not stored in this report; the whole prompt is in " +
        D.run_dirs[0] + "/items.jsonl" : "")));
    var docPre = el("pre");
    docPre.appendChild(highlighted(head, spans, row[1]));
    doc.appendChild(docPre);
    box.appendChild(doc);
    if (d[1] >= 0) {
      box.appendChild(el("h4", null, "Question"));
      box.appendChild(el("pre", null, texts[d[1]].replace(/^\n+/, "")));
    }
    var outs = el("div", "outputs");
    [["baseline output: " + D.baseline, d[2]], ["candidate output: " + D.candidates[c], d[3][c]]].forEach(function (pair) {
      var col = el("div");
      col.appendChild(el("h4", null, pair[0]));
      col.appendChild(pair[1] >= 0 ? el("pre", null, texts[pair[1]]) : el("p", "none", "no output"));
      outs.appendChild(col);
    });
    box.appendChild(outs);
    var st = strip(d[8], texts, c);
    if (st) { box.appendChild(st); }
    return box;
  }

  // the KL colour scale of the heatmaps (D.kl_scale: stops, low, high), log between low and high
  function rgb(hexColour) {
    return [1, 3, 5].map(function (i) { return parseInt(hexColour.slice(i, i + 2), 16); });
  }
  function klFill(kl) {
    var S = D.kl_scale, stops = S.stops;
    if (!(kl > S.low)) { return rgb(stops[0]); }
    var t = Math.min(1, Math.log(kl / S.low) / Math.log(S.high / S.low)) * (stops.length - 1);
    var i = Math.min(Math.floor(t), stops.length - 2), f = t - i, a = rgb(stops[i]), b = rgb(stops[i + 1]);
    return [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); });
  }
  function inkOn(c) {
    var lum = 0.2126 * Math.pow(c[0] / 255, 2.2) + 0.7152 * Math.pow(c[1] / 255, 2.2) + 0.0722 * Math.pow(c[2] / 255, 2.2);
    return lum > 0.2 ? "#000000" : "#ffffff";
  }

  // the baseline's answer token by token, shaded by candidate c's KL (layout: reports/view/strip.py)
  function strip(data, texts, c) {
    if (!data || data === -1) { return null; }
    var box = el("div", "kl-strip-box"), s = data[3][c], text = texts[data[0]], tokens = [], at = 0;
    data[1].forEach(function (n) { tokens.push(text.slice(at, at + n)); at += n; });
    box.appendChild(el("h4", null, "Drift of " + D.candidates[c] + " on the baseline's answer: KL per token"));
    if (!s) { box.appendChild(el("p", "none", "no drift record of this candidate for this item")); return box; }
    var S = D.kl_scale, other = {};
    var kl = s[0].map(function (code) {  // reports/view/strip.py kl_code
      return code === null ? null : (code === 0 ? 0 : Math.pow(10, code / S.steps + S.smallest));
    });
    s[1].forEach(function (i) { other[i] = true; });
    var line = el("div", "kl-strip");
    tokens.forEach(function (tok, i) {
      var cls = "tok" + (other[i] ? " other-top1" : "") + (i === s[2] ? " first-diff" : "") + (tok ? "" : " part");
      var span = el("span", cls, tok.replace(/\n/g, "\u21b5"));
      var fill = klFill(kl[i]);
      span.style.backgroundColor = "rgb(" + fill.join(",") + ")";
      span.style.color = inkOn(fill);
      span.title = "token " + i + ": KL " + (kl[i] === null ? "not finite" : (kl[i] === 0 ? "\u2264 1e-10" : "\u2248 " + kl[i].toPrecision(2))) + (other[i] ? " · the candidate's top-1 is another token" : "") +
        (i === s[2] ? " · first token where the candidate's answer parts from the baseline's" : "") +
        (tok ? "" : " · part of a character the next token completes");
      line.appendChild(span);
    });
    box.appendChild(line);
    if (data[2] > tokens.length) {
      box.appendChild(el("p", "meta", "the first " + tokens.length + " of " + data[2] + " tokens"));
    }
    s[3].forEach(function (n) { box.appendChild(el("p", "note flip-note", "harmful flip, " + n[0] + ": " + n[1])); });
    box.appendChild(el("p", "meta", "KL(baseline \u2016 candidate) per token, light \u2264 " + D.kl_scale.low +
      " to dark \u2265 " + D.kl_scale.high + " (log scale); underlined: the candidate's top-1 is another token; " +
      "boxed: the first token where its answer parts from the baseline's."));
    if (D.kl_scale.note) { box.appendChild(el("p", "meta", D.kl_scale.note)); }
    return box;
  }

  [selCand, selPack, selField, selOutcome, chkFlip].forEach(function (s) { s.addEventListener("change", apply); });
  $("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  $("prev").addEventListener("click", function () { if (page > 0) { page--; render(); } });
  $("next").addEventListener("click", function () { page++; render(); });
  root.hidden = false;
  apply();
  var ready = el("span");
  ready.id = "browser-ready";
  ready.hidden = true;
  root.appendChild(ready);
  document.documentElement.setAttribute("data-ready", "1");
}());
