// A real-world shaped ES module: class fields, generators, object methods, callbacks.
import { createServer } from "node:http";

export class Router {
  static #instances = 0;
  routes = new Map();

  constructor(prefix = "") {
    this.prefix = prefix;
    Router.#instances++;
  }

  get(path, handler) {
    this.routes.set(`GET ${this.prefix}${path}`, handler);
    return this;
  }

  handle = async (req, res) => {
    const handler = this.routes.get(`${req.method} ${req.url}`);
    if (!handler) {
      res.statusCode = 404;
      return res.end();
    }
    await handler(req, res);
  };

  *entries() {
    yield* this.routes;
  }

  static async *lines(stream) {
    for await (const chunk of stream) yield String(chunk);
  }
}

export const middleware = {
  logger(req, res, next) {
    console.log(req.method, req.url);
    next();
  },
  async auth(req) {
    throw new Error("not implemented");
  },
};

const server = createServer(function onRequest(req, res) {
  new Router().handle(req, res);
});

server.listen(8080, () => console.log("listening"));

module.exports.start = function start() {
  return server;
};
