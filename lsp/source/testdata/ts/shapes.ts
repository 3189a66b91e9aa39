// A real-world shaped module: abstract classes, overloads, generics, decorators and
// arrow functions bound to constants.
import { Injectable, Inject } from "@angular/core";

export enum Kind {
  Circle = "circle",
  Square = "square",
}

export abstract class Shape<TMeta extends Record<string, unknown> = {}> {
  protected constructor(readonly kind: Kind, protected meta?: TMeta) {}

  abstract area(): number;

  abstract perimeter(scale?: number): number;

  describe(): string {
    return `${this.kind}: ${this.area().toFixed(2)}`;
  }

  static compare<A extends Shape, B extends Shape>(a: A, b: B): number {
    return a.area() - b.area();
  }
}

@Injectable({ providedIn: "root" })
export class Circle extends Shape {
  #radius: number;

  constructor(@Inject("radius") radius: number) {
    super(Kind.Circle);
    this.#radius = radius;
  }

  area(): number {
    return Math.PI * this.#radius ** 2;
  }

  perimeter(scale = 1): number {
    return 2 * Math.PI * this.#radius * scale;
  }

  get radius(): number {
    return this.#radius;
  }

  set radius(r: number) {
    if (r < 0) throw new RangeError("negative radius");
    this.#radius = r;
  }

  private readonly onResize = async (width: number): Promise<void> => {
    await this.render(width);
  };

  protected render(width: number): Promise<void> {
    throw new Error("TODO: render " + width);
  }
}

export function area(shape: Circle): number;
export function area(shapes: Circle[]): number[];
export function area(input: Circle | Circle[]): number | number[] {
  return Array.isArray(input) ? input.map((s) => s.area()) : input.area();
}

export const identity = <T,>(value: T): T => value;

export const group = <K extends PropertyKey, V>(items: V[], key: (item: V) => K): Map<K, V[]> => {
  const out = new Map<K, V[]>();
  for (const item of items) {
    const k = key(item);
    out.set(k, [...(out.get(k) ?? []), item]);
  }
  return out;
};

export const load = async function loadShapes(url: string): Promise<Shape[]> {
  const res = await fetch(url);
  return (await res.json()) as Shape[];
};

export const handlers: Record<string, (e: Event) => void> = {
  click(e) {
    console.log(e.type);
  },
  "key-down": (e) => {},
};

declare function external(x: number): string;

export default class Registry<T extends Shape> {
  private items = new Map<string, T>();

  *[Symbol.iterator](): Iterator<T> {
    yield* this.items.values();
  }
}
