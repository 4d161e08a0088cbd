/**
 * Contract: a process-wide count of the round trips the store engines made (SQLite: batches sent to
 * the worker thread; PostgreSQL: statements sent, BEGIN and COMMIT included). For benches, which
 * print store round trips per message; nothing else reads it.
 */
export const storeRoundTrips = { count: 0 };
