// A setup file (every vitest config): removes the temp dirs a test file made once its own afterAll hooks have run
// (hooks after a file run in reverse order of registration, and this one is registered first).
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp.js';

afterAll(removeTempDirs);
