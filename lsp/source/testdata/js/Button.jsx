export function Button({ label }) {
  return <button title="Don't" onClick={() => alert("}")}>Don't {label} click</button>;
}

export const Empty = () => <></>;

export function Later() {
  // TODO: render something
}
