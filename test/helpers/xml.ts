/** An element of a parsed XML document. */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const NAME = '[A-Za-z_:][-A-Za-z0-9_:.]*';
const ENTITY = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g;

/**
 * A strict, small XML parser for checking generated documents: throws on anything not well-formed
 * (unbalanced or crossed tags, unquoted or repeated attributes, a bare `&` or `<`, text outside the
 * root, more than one root). No DTDs, no CDATA: our SVG has none.
 */
export function parseXml(source: string): XmlElement {
  let rest = source.replace(/^\uFEFF?<\?xml[^?]*\?>/, '');
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  const checkText = (text: string): void => {
    if (text.replace(ENTITY, '').includes('&')) throw new Error(`bare & in ${JSON.stringify(text.slice(0, 40))}`);
  };
  while (rest.length > 0) {
    const lt = rest.indexOf('<');
    const text = lt === -1 ? rest : rest.slice(0, lt);
    if (text) {
      checkText(text);
      if (stack.length === 0) {
        if (text.trim()) throw new Error(`text outside the root element: ${JSON.stringify(text.slice(0, 40))}`);
      } else {
        stack.at(-1)!.text += text;
      }
    }
    if (lt === -1) break;
    rest = rest.slice(lt);
    if (rest.startsWith('<!--')) {
      const end = rest.indexOf('-->');
      if (end === -1) throw new Error('unterminated comment');
      rest = rest.slice(end + 3);
      continue;
    }
    const close = new RegExp(`^</(${NAME})\\s*>`).exec(rest);
    if (close) {
      const open = stack.pop();
      if (!open || open.name !== close[1]) throw new Error(`</${close[1]}> closes ${open ? `<${open.name}>` : 'nothing'}`);
      rest = rest.slice(close[0].length);
      continue;
    }
    const tag = new RegExp(`^<(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"<]*"|'[^'<]*'))*)\\s*(/?)>`).exec(rest);
    if (!tag) throw new Error(`malformed markup at ${JSON.stringify(rest.slice(0, 60))}`);
    const element: XmlElement = { name: tag[1]!, attributes: {}, children: [], text: '' };
    for (const m of tag[2]!.matchAll(new RegExp(`(${NAME})\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, 'g'))) {
      const value = m[2] ?? m[3] ?? '';
      checkText(value);
      if (m[1]! in element.attributes) throw new Error(`attribute ${m[1]} repeated on <${element.name}>`);
      element.attributes[m[1]!] = value;
    }
    if (stack.length > 0) stack.at(-1)!.children.push(element);
    else if (root) throw new Error('more than one root element');
    else root = element;
    if (!tag[3]) stack.push(element);
    rest = rest.slice(tag[0].length);
  }
  if (stack.length > 0) throw new Error(`<${stack.at(-1)!.name}> is never closed`);
  if (!root) throw new Error('no root element');
  return root;
}

/** Every element below (and including) `element` named `name`. */
export function findAll(element: XmlElement, name: string): XmlElement[] {
  return [...(element.name === name ? [element] : []), ...element.children.flatMap((c) => findAll(c, name))];
}
