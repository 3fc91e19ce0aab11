// Test environment: jest-dom matchers, and the browser APIs jsdom lacks that Grafana's UI uses.
import '@testing-library/jest-dom';
import { TextEncoder, TextDecoder } from 'util';

Object.assign(global, { TextDecoder, TextEncoder });

// react-dom/server (imported by @grafana/ui) needs MessageChannel, which jsdom lacks. Node's
// own would keep jest alive after the tests; this one schedules with timers instead.
if (typeof global.MessageChannel === 'undefined') {
  global.MessageChannel = class MessageChannel {
    constructor() {
      const port1 = { onmessage: null, close() {} };
      this.port1 = port1;
      this.port2 = {
        postMessage: (data) => setTimeout(() => port1.onmessage && port1.onmessage({ data }), 0),
        close() {},
      };
    }
  };
}

if (typeof window !== 'undefined') {
  Object.defineProperty(window, 'matchMedia', {
    writable: true,
    value: (query) => ({
      matches: false,
      media: query,
      onchange: null,
      addListener: jest.fn(),
      removeListener: jest.fn(),
      addEventListener: jest.fn(),
      removeEventListener: jest.fn(),
      dispatchEvent: jest.fn(),
    }),
  });
  HTMLCanvasElement.prototype.getContext = () => null;
  if (!window.ResizeObserver) {
    window.ResizeObserver = class {
      observe() {}
      unobserve() {}
      disconnect() {}
    };
  }
}
