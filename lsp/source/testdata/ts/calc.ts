// A fixture: a calculator class, arrow functions and literals full of braces.
import { Base, Config } from "./base";

export interface Shape {
  area(): number;
  cb: (x: number) => { ok: boolean };
}

export class Calc<T extends { id: string }> extends Base implements Shape {
  private total = 0;
  static readonly zero: number = 0;
  handler = (e: Event): void => {
    this.total++;
  };

  constructor(private readonly cfg: Config) {
    super();
  }

  add(a: number, b: number): number {
    const s = "}{";
    return a + b;
  }

  async fetch(id: string): Promise<{ id: string }> {
    throw new Error("Not implemented");
  }

  get value(): number {
    return this.total;
  }

  area(): number;
  area(x?: number): number {
    return x ?? 0;
  }
}

export const double = (x: number): number => x * 2;

export const parse = async (s: string): Promise<number> => {
  throw new Error(`not implemented: parse ${s}`);
};

const pattern = /[{}]+\/"'`/g;

function tricky(s: string): string {
  const t = `a ${s.replace(/}/g, "{")} b ${`nested ${"}"}`}`;
  // } in a comment
  /* { in a block comment */
  return t + pattern.source;
}

export default function (a: number, b: number) {
  return a / 2 / b;
}

export const api = {
  get(url: string) {
    return fetch(url);
  },
  post: async (url: string) => {
    // TODO: implement post
  },
};

export function todo(): Promise<void> {}
