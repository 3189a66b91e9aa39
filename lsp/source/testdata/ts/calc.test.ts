import { describe, expect, it, test } from "vitest";
import { Calc } from "./calc";

describe("Calc", () => {
  const calc = new Calc({ id: "x" });

  it("adds {numbers}", () => {
    expect(calc.add(1, 2)).toBe(3);
  });

  it.each([[1, 2, 3]])("adds %i + %i", (a, b, want) => {
    expect(calc.add(a, b)).toBe(want);
  });

  describe("fetch", () => {
    test(`fetches ${"id"} (async)`, async () => {
      await expect(calc.fetch("x")).rejects.toThrow();
    });

    it.todo("caches");
  });
});
