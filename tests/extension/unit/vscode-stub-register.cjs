// Preload for the unit tests: `require("vscode")` gives the stub next to this file.
// (tsx loads the .ts tests and sources as CommonJS, so one hook on require is enough.)
// Names the stub lacks come back as an empty class, so libraries that subclass VS Code
// types at load time (vscode-languageclient) can be imported.
const Module = require("node:module");
const path = require("node:path");

const stubPath = path.join(__dirname, "vscode-stub.ts");
let proxy;
const originalLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request !== "vscode") return originalLoad.call(this, request, parent, isMain);
  if (!proxy) {
    const stub = originalLoad.call(this, stubPath, parent, isMain);
    const generic = new Map();
    proxy = new Proxy(stub, {
      get(target, name) {
        if (name in target || typeof name === "symbol") return target[name];
        if (!generic.has(name)) generic.set(name, class {});
        return generic.get(name);
      },
    });
  }
  return proxy;
};
