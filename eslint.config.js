// Lint rules: typescript-eslint's type-aware recommended set, with floating and misused promises as errors
// (a dropped promise in capture is a lost event or a 200 before durability).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', '.tap/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The launcher's modules are plain JavaScript (they run before tsx's loader): ten such files, past
        // the default's eight.
        projectService: {
          allowDefaultProject: ['*.js', 'bin/*.js', 'scripts/*.js', 'test/*.js'],
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  {
    // tap's t.test() returns a promise that tap itself awaits; flagging each call would only add noise.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The web console's modules run in the browser, outside the TypeScript project.
    files: ['src/console/**/*.js'],
    languageOptions: {
      parserOptions: { projectService: false, project: false },
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'sessionStorage',
          'fetch',
          'performance',
          'Node',
          'Intl',
          'setTimeout',
          'clearTimeout',
          'queueMicrotask',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
