/**
 * The OpenTelemetry semantic conventions version the traces follow (./traces.ts). It is the version of
 * the @opentelemetry/semantic-conventions package installed exactly (package.json); the tracer carries
 * the matching schema URL. Changing one means checking the GenAI attribute names against the other.
 */
export const SEMCONV_VERSION = '1.45.0';
export const SEMCONV_SCHEMA_URL = `https://opentelemetry.io/schemas/${SEMCONV_VERSION}`;
