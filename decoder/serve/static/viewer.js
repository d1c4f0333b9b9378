// The derivation viewer: POST /translate, then draw the tree, rules, k-best list and chart heat maps.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

function htmlElement(name, text, className) {
  const element = document.createElement(name);
  if (text !== undefined) element.textContent = text;
  if (className) element.className = className;
  return element;
}

// Rule tables escape "|", "[" and "]" (decoder.grammar.escape_word); the tree keeps them escaped.
function unescapeWord(word) {
  return word.replace(/&#124;/g, "|").replace(/&#91;/g, "[").replace(/&#93;/g, "]");
}

// "[S [NP [DT the] [NN house]] ...]" -> {label, children: [... {word}]}
function parseTree(text) {
  const tokens = text.match(/\[|\]|[^\s\[\]]+/g) || [];
  let position = 0;
  function node() {
    if (tokens[position] !== "[") return {word: unescapeWord(tokens[position++])};
    position++;  // "["
    const result = {label: tokens[position++], children: []};
    while (position < tokens.length && tokens[position] !== "]") result.children.push(node());
    position++;  // "]"
    return result;
  }
  return tokens.length ? node() : null;
}

// Leaves at evenly spaced columns, each parent centred over its children, one row per depth.
function drawTree(tree) {
  const columnWidth = 70, rowHeight = 48, margin = 20;
  let nextColumn = 0, maxDepth = 0;
  function layout(node, depth) {
    maxDepth = Math.max(maxDepth, depth);
    node.depth = depth;
    if (node.word !== undefined) {
      node.x = nextColumn++;
    } else {
      node.children.forEach((child) => layout(child, depth + 1));
      node.x = node.children.length
        ? (node.children[0].x + node.children[node.children.length - 1].x) / 2 : nextColumn++;
    }
  }
  layout(tree, 0);
  const width = Math.max(nextColumn, 1) * columnWidth + 2 * margin;
  const height = (maxDepth + 1) * rowHeight + 2 * margin;
  const svg = svgElement("svg", {id: "tree-svg", width, height, viewBox: `0 0 ${width} ${height}`});
  const px = (node) => margin + node.x * columnWidth + columnWidth / 2;
  const py = (node) => margin + node.depth * rowHeight + 12;
  function draw(node) {
    const isLeaf = node.word !== undefined;
    const group = svgElement("g", {class: isLeaf ? "leaf" : "node", "data-label": isLeaf ? node.word : node.label});
    for (const child of node.children || []) {
      svg.appendChild(svgElement("line", {class: "edge", x1: px(node), y1: py(node) + 4,
                                          x2: px(child), y2: py(child) - 12}));
      draw(child);
    }
    group.appendChild(svgElement("text", {x: px(node), y: py(node), "text-anchor": "middle"},
                                 isLeaf ? node.word : node.label));
    svg.appendChild(group);
  }
  draw(tree);
  return svg;
}

// One heat map: a cell per (start, length), coloured by `key` ("items" or "edges").
function drawHeatmap(cells, nWords, key, title) {
  const size = Math.max(14, Math.min(36, Math.floor(720 / Math.max(nWords, 1)))), margin = 40;
  const width = nWords * size + margin + 10, height = nWords * size + margin + 24;
  const svg = svgElement("svg", {class: "heatmap", "data-kind": key, width, height});
  svg.appendChild(svgElement("text", {x: margin, y: 14}, `${title} (columns: span start; rows: span length)`));
  const index = key === "items" ? 2 : 3;
  const maximum = Math.max(1, ...cells.map((cell) => cell[index]));
  for (let i = 0; i < nWords; i++) {
    svg.appendChild(svgElement("text", {class: "cell-label", x: margin + i * size + size / 2,
                                        y: height - 8}, String(i)));
    svg.appendChild(svgElement("text", {class: "cell-label", x: margin / 2,
                                        y: 24 + i * size + size / 2}, String(i + 1)));
  }
  for (const [start, length, items, edges] of cells) {
    const value = key === "items" ? items : edges;
    const rect = svgElement("rect", {
      class: "cell", x: margin + start * size, y: 24 + (length - 1) * size, width: size, height: size,
      fill: `rgba(200, 60, 20, ${(0.12 + 0.88 * value / maximum).toFixed(3)})`,
      "data-start": start, "data-length": length, "data-items": items, "data-edges": edges});
    rect.appendChild(svgElement("title", {}, `span ${start}..${start + length}: ${items} items, ${edges} edges`));
    svg.appendChild(rect);
  }
  return svg;
}

function formatFeatures(features) {
  return Object.entries(features || {})
    .map(([name, value]) => `${name}=${value === null ? "-inf" : Number(value).toFixed(3)}`).join(" ");
}

function renderRules(rules) {
  const body = $("rules").querySelector("tbody");
  body.replaceChildren();
  for (const rule of rules) {
    const row = document.createElement("tr");
    row.appendChild(htmlElement("td", `${rule.span[0]}..${rule.span[1]}`));
    if (rule.source) {
      const cell = htmlElement("td");
      cell.appendChild(htmlElement("code", `${rule.source.lhs} -> ${rule.source.source.join(" ")} ||| `
                                           + rule.source.target.join(" ")));
      if (rule.source.tree) cell.appendChild(htmlElement("div", rule.source.tree, "muted"));
      row.appendChild(cell);
      const binarization = htmlElement("td");
      const list = document.createElement("ul");
      for (const binary of rule.binarization) list.appendChild(htmlElement("li", binary));
      binarization.appendChild(list);
      row.appendChild(binarization);
      row.appendChild(htmlElement("td", formatFeatures(rule.rule_features)));
      row.appendChild(htmlElement("td", Number(rule.rule_score).toFixed(3)));
    } else {
      row.appendChild(htmlElement("td", `${rule.symbol}: ${rule.rule}`));
      for (let i = 0; i < 3; i++) row.appendChild(htmlElement("td", ""));
    }
    row.className = "rule";
    body.appendChild(row);
  }
}

// The translation, its words passed through untranslated (unknown to the grammar) marked "unknown".
function markedText(text, unknownWords) {
  const unknown = new Set((unknownWords || []).map((w) => w.toLowerCase()));
  const pieces = text.split(/(\s+)/);
  return pieces.map((piece) => {
    const word = piece.toLowerCase().replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "");
    return unknown.has(word) ? htmlElement("span", piece, "unknown") : document.createTextNode(piece);
  });
}

function render(result) {
  $("text").replaceChildren(...markedText(result.text, result.unknown_words));
  const unknown = result.unknown_words || [];
  $("unknown").textContent = unknown.length
    ? `unknown words, passed through untranslated: ${unknown.join(" ")}` : "";
  const stats = result.stats;
  $("summary").textContent = `score ${Number(result.score).toFixed(4)} | ${formatFeatures(result.features)} | `
    + `${stats.words} words, ${stats.items} items, ${stats.edges} edges, `
    + `${(1000 * stats.seconds).toFixed(1)} ms`;
  const tree = parseTree(result.tree);
  $("tree").replaceChildren(tree ? drawTree(tree) : htmlElement("p", "(no tree)"));
  renderRules(result.rules);
  $("kbest-list").replaceChildren(...result.kbest.map((t) => {
    const item = htmlElement("li");
    item.appendChild(htmlElement("span", t.text, "kbest-text"));
    item.appendChild(htmlElement("span", ` (${Number(t.score).toFixed(4)})`, "muted"));
    return item;
  }));
  const cells = stats.chart_cells || [];
  $("heatmaps").replaceChildren(drawHeatmap(cells, stats.words, "items", "items per cell"),
                                drawHeatmap(cells, stats.words, "edges", "edges per cell"));
  $("result").hidden = false;
}

async function translate(event) {
  event.preventDefault();
  const status = $("status");
  status.className = "";
  status.textContent = "translating...";
  try {
    const response = await fetch("/translate", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({sentence: $("sentence").value, kbest: Number($("kbest").value) || 1}),
    });
    const result = await response.json();
    if (!response.ok) throw new Error(result.error || `HTTP ${response.status}`);
    render(result);
    status.textContent = "";
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  } catch (error) {
    status.className = "error";
    status.textContent = error.message;
  }
}

$("form").addEventListener("submit", translate);
