// Field management for server-side apply: field sets, FieldsV1, and objects seen through their shapes.
export * from './path-set.js';
export * from './shape.js';
export * from './typed.js';
