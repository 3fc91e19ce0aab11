// Build of the plugin bundle: the essentials of @grafana/create-plugin's webpack configuration
// (AMD module in dist/module.js, Grafana's shared libraries as externals, plugin.json and
// assets copied, %VERSION%/%TODAY% filled in), without its dev-server and lint plugins.
const path = require('path');
const fs = require('fs');
const CopyWebpackPlugin = require('copy-webpack-plugin');
const VirtualModulesPlugin = require('webpack-virtual-modules');

const ROOT = path.resolve(__dirname, '..', '..');
const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');
const pluginJson = JSON.parse(fs.readFileSync(path.join(SRC, 'plugin.json'), 'utf8'));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

// Grafana provides these at runtime; bundling them would load a second copy.
const externals = [
  { 'amd-module': 'module' },
  'lodash',
  'jquery',
  'moment',
  'slate',
  'emotion',
  '@emotion/react',
  '@emotion/css',
  'prismjs',
  'slate-plain-serializer',
  '@grafana/slate-react',
  'react',
  'react/jsx-runtime',
  'react/jsx-dev-runtime',
  'react-dom',
  'react-redux',
  'redux',
  'rxjs',
  'i18next',
  'react-router',
  'd3',
  'angular',
  /^@grafana\/ui/i,
  /^@grafana\/runtime/i,
  /^@grafana\/data/i,
];

// Assets referenced by chunks resolve under the plugin's public URL, wherever Grafana serves it.
const publicPath = new VirtualModulesPlugin({
  'node_modules/grafana-public-path.js': `
import amdMetaModule from 'amd-module';
__webpack_public_path__ =
  amdMetaModule && amdMetaModule.uri
    ? amdMetaModule.uri.slice(0, amdMetaModule.uri.lastIndexOf('/') + 1)
    : 'public/plugins/${pluginJson.id}/';
`,
});

const fill = (content) =>
  content
    .toString()
    .replace(/%VERSION%/g, pkg.version)
    .replace(/%TODAY%/g, new Date().toISOString().substring(0, 10))
    .replace(/%PLUGIN_ID%/g, pluginJson.id);

module.exports = (env) => ({
  context: SRC,
  devtool: env.production ? 'source-map' : 'eval-source-map',
  entry: { module: './module.ts' },
  externals,
  mode: env.production ? 'production' : 'development',
  module: {
    rules: [
      {
        test: /src\/(?:.*\/)?module\.tsx?$/,
        use: [{ loader: 'imports-loader', options: { imports: 'side-effects grafana-public-path' } }],
      },
      {
        exclude: /node_modules/,
        test: /\.[tj]sx?$/,
        use: {
          loader: 'swc-loader',
          options: {
            jsc: {
              baseUrl: SRC,
              target: 'es2015',
              parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true },
            },
          },
        },
      },
      { test: /\.(png|jpe?g|gif|svg)$/, type: 'asset/resource', generator: { filename: '[file]' } },
    ],
  },
  output: {
    clean: true,
    filename: '[name].js',
    library: { type: 'amd' },
    path: DIST,
    publicPath: `public/plugins/${pluginJson.id}/`,
    uniqueName: pluginJson.id,
  },
  plugins: [
    publicPath,
    new CopyWebpackPlugin({
      patterns: [
        { from: 'plugin.json', to: '.', transform: fill },
        { from: '../README.md', to: '.', transform: fill },
        { from: '../LICENSE', to: '.', noErrorOnMissing: true },
        { from: 'img/**/*', to: '.' },
      ],
    }),
  ],
  resolve: {
    extensions: ['.js', '.jsx', '.ts', '.tsx'],
    modules: [SRC, 'node_modules'],
  },
});
