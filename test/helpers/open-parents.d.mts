// Types for open-parents.mjs (plain JavaScript: jest's globalSetup loads it without the TypeScript transform).
/** The checkout this test code belongs to. */
export declare const checkoutRoot: string;
/** globalSetup only: adds o+x to the folders above the checkout and its node_modules (as root). */
export declare function openParents(): void;
/** globalTeardown only: puts back the modes openParents changed. */
export declare function restoreParents(): void;
/** Throws naming each folder from `from` (default: the checkout and its node_modules) up to / others cannot pass (as root). */
export declare function assertParentsOpen(from?: string): void;
