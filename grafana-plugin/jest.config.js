// Jest: TypeScript through SWC, jsdom for the React editors, Grafana's ESM-only dependencies
// transformed (as @grafana/create-plugin's configuration does). The contract test picks the
// node environment itself.
process.env.TZ = 'UTC';

const esmOnly = [
  '@grafana/schema',
  '@wojtekmaj/date-utils',
  'd3',
  'd3-color',
  'd3-force',
  'd3-interpolate',
  'd3-scale-chromatic',
  'get-user-locale',
  'marked',
  'memoize',
  'mimic-function',
  'ol',
  'react-calendar',
  'react-colorful',
  'rxjs',
  'uuid',
  '@react-hookz',
  '@ver0',
];

module.exports = {
  moduleNameMapper: {
    '\\.(css|scss|sass)$': 'identity-obj-proxy',
    '^react-inlinesvg$': '<rootDir>/src/test/mocks/react-inlinesvg.tsx',
  },
  modulePaths: ['<rootDir>/src'],
  setupFilesAfterEnv: ['<rootDir>/jest-setup.js'],
  testEnvironment: 'jest-environment-jsdom',
  // The editor tests render Grafana UI and type into it: slow on a loaded CI machine.
  testTimeout: 30_000,
  testMatch: ['<rootDir>/src/**/*.test.{ts,tsx}'],
  transform: {
    '^.+\\.(t|j)sx?$|^.+\\.mjs$': [
      '@swc/jest',
      {
        sourceMaps: 'inline',
        jsc: { parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true } },
      },
    ],
  },
  transformIgnorePatterns: [`node_modules/(?!.*(${esmOnly.join('|')})/.*)`],
  watchPathIgnorePatterns: ['<rootDir>/node_modules', '<rootDir>/dist'],
};
