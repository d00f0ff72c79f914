// Yielding to the event loop between steps of the page's start-up. Besides keeping each
// task short, it lets the browser finish starting the layout worker: a dedicated worker
// only starts once its page's main thread gets to handle the browser's reply, so a long
// start-up task on the page delays the worker (and Graphviz) by as much.

/** Resolves in a new task, without setTimeout's clamping. */
export function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    const c = new MessageChannel();
    c.port1.onmessage = () => {
      c.port1.close();
      resolve();
    };
    c.port2.postMessage(null);
  });
}

/**
 * A pause for a long loop on the page (an export): await it between steps. It goes on at once
 * until `budgetMs` of work since the last new task, then waits for a new task, so no task of
 * the loop is much longer than the budget.
 */
export function slicer(budgetMs: number): () => Promise<void> {
  let start = performance.now();
  return async () => {
    if (performance.now() - start < budgetMs) return;
    await nextTask();
    start = performance.now();
  };
}
