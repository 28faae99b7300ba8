/** The page's element with this id (the server's HTML has them all). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

/** A new element; text goes in as text, never as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Sets a node's text only when it changed, so a redraw leaves unchanged text alone. */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}
