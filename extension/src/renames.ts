// Files renamed in the editor (F2 in the explorer, a refactoring): where a panel's file, or
// a file remembered by its URI, is after the rename. Pure: unit-tested.

/** One rename as VS Code reports it, as URI strings. */
export interface Renamed {
  readonly from: string;
  readonly to: string;
}

/** Where `uri` is after `from` was renamed to `to`: `to` for the file itself, the same
 * place under `to` for a file in a folder renamed; undefined when the rename did not move it. */
export function renamedUri(uri: string, { from, to }: Renamed): string | undefined {
  if (uri === from) return to;
  const folder = from.endsWith("/") ? from : `${from}/`;
  if (!uri.startsWith(folder)) return undefined;
  return `${to.endsWith("/") ? to : `${to}/`}${uri.slice(folder.length)}`;
}

/** `uri` after every rename of `renames`, in order; undefined when none moved it. */
export function afterRenames(uri: string, renames: readonly Renamed[]): string | undefined {
  let now = uri;
  for (const r of renames) now = renamedUri(now, r) ?? now;
  return now === uri ? undefined : now;
}
