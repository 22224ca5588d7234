// Formats or checks the project's Lua files with StyLua's WASM build (the npm
// package @johnnymorganz/stylua), configured by the repository's .stylua.toml.
// A prebuilt StyLua binary cannot be downloaded everywhere this project is built;
// the WASM library installs from the npm registry like any other package.
//
//   node tools/stylua.mjs --check [files...]   exit 1 and list files that differ
//   node tools/stylua.mjs [files...]           rewrite files in place
// Without files: every Lua file git knows of (tracked or untracked, not ignored).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as stylua from "@johnnymorganz/stylua";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

// The subset of .stylua.toml StyLua's own CLI reads that this project uses:
// flat `key = value` lines with strings, numbers and booleans.
function readConfig() {
  const text = readFileSync(join(root, ".stylua.toml"), "utf8");
  const config = stylua.Config.new();
  const enums = {
    line_endings: stylua.LineEndings,
    indent_type: stylua.IndentType,
    quote_style: stylua.QuoteStyle,
    call_parentheses: stylua.CallParenType,
    collapse_simple_statement: stylua.CollapseSimpleStatement,
    space_after_function_names: stylua.SpaceAfterFunctionNames,
    syntax: stylua.LuaVersion,
  };
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const match = /^(\w+)\s*=\s*(.+)$/.exec(line);
    if (!match) throw new Error(`.stylua.toml: cannot read line: ${raw}`);
    const [, key, rawValue] = match;
    let value = JSON.parse(rawValue);
    if (key in enums) {
      if (!(value in enums[key])) throw new Error(`.stylua.toml: ${key} = ${rawValue} is not known`);
      value = enums[key][value];
    } else if (!(key in config)) {
      throw new Error(`.stylua.toml: unknown option ${key}`);
    }
    config[key] = value;
  }
  return config;
}

function luaFiles() {
  const out = execFileSync(
    "git",
    ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.lua"],
    { cwd: root, encoding: "utf8" },
  );
  return out.split("\0").filter(Boolean).map((f) => join(root, f));
}

const args = process.argv.slice(2);
const check = args.includes("--check");
const files = args.filter((a) => a !== "--check");
const targets = files.length ? files : luaFiles();
const differing = [];
let failed = false;
for (const file of targets) {
  let source;
  try {
    source = readFileSync(file, "utf8");
  } catch (err) {
    if (err.code === "ENOENT") continue; // deleted but still in git's index
    throw err;
  }
  let formatted;
  try {
    // formatCode takes ownership of its Config: build one per file.
    formatted = stylua.formatCode(source, readConfig(), undefined, stylua.OutputVerification.None);
  } catch (err) {
    console.error(`stylua: ${file}: ${err}`);
    failed = true;
    continue;
  }
  if (formatted === source) continue;
  differing.push(file);
  if (!check) writeFileSync(file, formatted);
}
if (check && differing.length) {
  for (const file of differing) console.error(`stylua: not formatted: ${file}`);
  console.error("stylua: run `node tools/stylua.mjs` to format");
  process.exit(1);
}
if (!check && differing.length) console.log(`stylua: formatted ${differing.length} file(s)`);
process.exit(failed ? 1 : 0);
