// The site opened from disk (file://): Chromium refuses to start a Web Worker from a file URL,
// and MkDocs Material runs its search in one. Here, and only for file://, Worker is a stand-in
// that runs the worker's script in a hidden same-origin frame and passes messages both ways,
// as a worker would (copied with structuredClone). The search index itself comes from
// search/search_index.js, which the theme loads instead of the JSON on file:// (written by
// tools/codegen/docs_site.py). Served over HTTP (`make docs`) nothing here runs.
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  class FileWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      this.pending = [];
      const start = () => {
        (document.body || document.documentElement).appendChild(this.frame);
        const scope = this.frame.contentWindow;
        scope.postMessage = (data) => setTimeout(() => this.deliver(structuredClone(data)));
        scope.importScripts = () => {
          throw new Error("importScripts is not available to a worker opened from disk");
        };
        const script = scope.document.createElement("script");
        script.src = new URL(url, location.href).href;
        script.onload = () => {
          this.scope = scope;
          for (const data of this.pending.splice(0)) this.postMessage(data);
        };
        scope.document.head.appendChild(script);
      };
      if (document.body) start();
      else document.addEventListener("DOMContentLoaded", start, { once: true });
    }

    deliver(data) {
      const event = new MessageEvent("message", { data });
      if (typeof this.onmessage === "function") this.onmessage(event);
      this.dispatchEvent(event);
    }

    postMessage(data) {
      if (!this.scope) {
        this.pending.push(data);
        return;
      }
      const event = new this.scope.MessageEvent("message", { data: structuredClone(data) });
      setTimeout(() => this.scope.dispatchEvent(event));
    }

    terminate() {
      this.frame.remove();
      this.scope = undefined;
    }
  }

  window.Worker = FileWorker;
})();
