// esbuild bundles the stylesheet the entry imports into its own hashed .css file
declare module '*.css';
