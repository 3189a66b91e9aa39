import React, { useCallback, useState } from "react";

type Props<T> = { items: T[]; render: (item: T) => React.ReactNode; onPick?: (item: T) => void };

export function List<T extends { id: string }>({ items, render, onPick }: Props<T>) {
  const [picked, setPicked] = useState<T | null>(null);
  const pick = useCallback((item: T) => {
    setPicked(item);
    onPick?.(item);
  }, [onPick]);
  return (
    <ul className="list">
      {items.map((item) => (
        <li key={item.id} onClick={() => pick(item)} aria-selected={picked?.id === item.id}>
          {render(item)}
        </li>
      ))}
    </ul>
  );
}

export const Empty = (): JSX.Element => <p>{"{nothing}"} here</p>;

export default function App() {
  const [n, setN] = useState(0);
  function increment() {
    setN((x) => x + 1);
  }
  return <button onClick={increment}>clicked {n} times</button>;
}

export class Legacy extends React.Component<{ title: string }> {
  state = { open: false };

  toggle = () => {
    this.setState({ open: !this.state.open });
  };

  render() {
    return <h1 onClick={this.toggle}>{this.props.title}</h1>;
  }
}

export function Pending(): JSX.Element {
  // TODO: design the pending state
  return null as any;
}
