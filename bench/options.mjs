// The bench scripts' command line (`--name value` options) and the
// repository's root, which they find their binaries and models under.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const args = process.argv.slice(2);

// The value after --name, or the fallback when the option is absent.
export const opt = (name, fallback) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : fallback;
};

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
