const { format } = require("../format");

describe('format', () => {
  it('handles "quotes" and it\'s {braces}', () => {
    expect(format('{')).toBe("{}");
  });

  test("regex /}/ and template `}`", function () {
    const re = /\}/;
    expect(`${"}"}`.match(re)).toBeTruthy();
  });

  it("is pending", () => {
    throw new Error("not implemented");
  });
});
