/**
 * Renders a results page and its chart again from the raw samples of a run:
 *
 *   npx tsx bench/render.ts bench/results/<date>.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fromJSON, renderMarkdown, renderSvg, writeChart, type SavedReport } from './lib/report.js';

const file = process.argv[2];
if (!file?.endsWith('.json')) {
  console.error('usage: tsx bench/render.ts bench/results/<date>.json');
  process.exit(2);
}
const report = fromJSON(JSON.parse(readFileSync(file, 'utf8')) as SavedReport);
const stem = file.replace(/\.json$/, '');
const png = await writeChart(`${stem}.svg`, `${stem}.png`, renderSvg(report));
report.chartFile = `${basename(stem)}.${png ? 'png' : 'svg'}`;
writeFileSync(`${stem}.md`, renderMarkdown(report));
console.log(`${stem}.md, ${report.chartFile}`);
