// Writes docs/errors.md from the error catalogue: `npm run docs:errors`.
import { writeFileSync } from 'node:fs';
import { renderErrorDocs } from '../packages/core/src/error-docs.js';

writeFileSync(new URL('../docs/errors.md', import.meta.url), renderErrorDocs());
