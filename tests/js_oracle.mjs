// The Node.js oracle for assay's expression language (SPEC §3), driven by tests/js_oracle.py.
//
// Protocol: one JSON request per stdin line, {"states": [...], "cases": [[source, stateIndex], ...]},
// answered by one stdout line, {"results": [tagged, ...]} in the same order. A tagged value is
//   ["undefined"] | ["null"] | ["boolean", b] | ["number", String(n) or "-0"]
//   | ["string", [UTF-16 code units]] | ["array", [tagged...]]
//   | ["object", [[key code units, tagged]...]]  (JS property order) | ["function"]
// or, when the expression throws, ["error", name, message]; ["syntax", message] when the
// source does not even compile as JavaScript (a generator bug, never an assay bug).

import { createInterface } from "node:readline";

// The only globals an expression can see (SPEC §3); every other free name is undefined.
const GLOBALS = new Map(
  Object.entries({
    Math,
    Object,
    Array,
    Number,
    String,
    Boolean,
    isNaN,
    NaN,
    Infinity,
    undefined,
  }),
);

// Identifier resolution of SPEC §3: arrow parameters (inner function scopes) first, then the
// state's own top-level keys, then GLOBALS; `has` claims every name so none reaches globalThis.
function scopeOf(state) {
  return new Proxy(state, {
    has(_target, key) {
      return typeof key === "string";
    },
    get(target, key) {
      if (typeof key !== "string") return undefined;
      if (Object.hasOwn(target, key)) return target[key];
      return GLOBALS.get(key);
    },
  });
}

const compiled = new Map();

function compile(source) {
  let fn = compiled.get(source);
  if (fn === undefined) {
    fn = new Function("__scope", `with (__scope) { return (\n${source}\n); }`);
    if (compiled.size > 50000) compiled.clear();
    compiled.set(source, fn);
  }
  return fn;
}

function units(s) {
  const out = new Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function tag(v) {
  switch (typeof v) {
    case "undefined":
      return ["undefined"];
    case "boolean":
      return ["boolean", v];
    case "number":
      return ["number", Object.is(v, -0) ? "-0" : String(v)];
    case "string":
      return ["string", units(v)];
    case "function":
      return ["function"];
    case "object":
      if (v === null) return ["null"];
      if (Array.isArray(v)) return ["array", Array.from(v, tag)];
      return ["object", Object.keys(v).map((k) => [units(k), tag(v[k])])];
    default:
      return ["error", "OracleError", `unexpected ${typeof v} result`];
  }
}

function evaluate(source, scope) {
  let fn;
  try {
    fn = compile(source);
  } catch (e) {
    return ["syntax", String(e && e.message)];
  }
  try {
    return tag(fn(scope));
  } catch (e) {
    const name = e && typeof e.name === "string" ? e.name : "Error";
    return ["error", name, String(e && e.message)];
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  const scopes = request.states.map(scopeOf);
  const results = request.cases.map(([source, index]) => evaluate(source, scopes[index]));
  process.stdout.write(`${JSON.stringify({ results })}\n`);
});
