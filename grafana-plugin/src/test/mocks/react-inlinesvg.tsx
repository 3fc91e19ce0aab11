// Tests only: Grafana's icons load SVG files over HTTP through react-inlinesvg; render an
// empty <svg> with the same props instead (no network, no async state update).
import React from 'react';

export default function InlineSVG({ src, innerRef: _ref, ...rest }: { src: string; [k: string]: unknown }) {
  return <svg data-src={src} {...(rest as React.SVGProps<SVGSVGElement>)} />;
}
