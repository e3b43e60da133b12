// The form of every credential this server issues (docs/credentials.md): a prefix that says what
// it is, 43 base62 characters of randomness (256 bits, as many as the library's default opaque
// tokens), and a checksum of the rest — CRC32 in base62, 6 characters — so that a secret scanner
// recognises a leaked one offline without false positives, and so that a mistyped, truncated or
// invented value is refused here, before any store is read (docs/credentials.md#refused-early).
// Credentials issued before this form (no prefix) keep going to the store as they always did.
import { randomFillSync } from 'node:crypto';

export type CredentialKind = 'access_token' | 'refresh_token' | 'authorization_code' | 'client_secret';

export const CREDENTIAL_PREFIXES: Readonly<Record<CredentialKind, string>> = {
  access_token: 'spat_',
  refresh_token: 'sprt_',
  authorization_code: 'spac_',
  client_secret: 'spcs_',
};

const KINDS = Object.keys(CREDENTIAL_PREFIXES) as CredentialKind[];
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 × log2(62) ≈ 256.03 bits. */
export const RANDOM_LENGTH = 43;
/** 62^6 > 2^32: every CRC32 fits. */
export const CHECKSUM_LENGTH = 6;
const PREFIX_LENGTH = 5;
export const CREDENTIAL_LENGTH = PREFIX_LENGTH + RANDOM_LENGTH + CHECKSUM_LENGTH;

/** One pattern per kind, for secret scanners (docs/credentials.md lists them as written here). */
export const CREDENTIAL_PATTERNS: Readonly<Record<CredentialKind, RegExp>> = Object.fromEntries(
  KINDS.map((kind) => [kind, new RegExp(`\\b${CREDENTIAL_PREFIXES[kind]}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}\\b`)]),
) as Record<CredentialKind, RegExp>;

// CRC-32 (IEEE 802.3, the polynomial zlib uses: test/unit/credential-format.test.ts compares the two)
// over the ASCII characters of a credential, in JavaScript: two to three of them on every refresh,
// where the native call's overhead would cost more than the arithmetic.
const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

/** CRC-32 of an ASCII string (every credential body is: the prefixes and base62). */
export function crc32Ascii(text: string): number {
  let crc = -1;
  for (let i = 0; i < text.length; i += 1) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let rest = n; rest > 0; rest = Math.floor(rest / 62)) out = BASE62[rest % 62]! + out;
  return out.padStart(width, '0');
}

/** The checksum of the prefix and the random part. */
export const checksumOf = (body: string): string => base62(crc32Ascii(body), CHECKSUM_LENGTH);

// Random bytes drawn from the system in blocks, as nanoid does: one call per ~80 credentials
// instead of one per credential (two on every refresh). A byte is used once.
const pool = Buffer.allocUnsafe(4096);
let poolOffset = pool.length;
function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** Each ASCII code's base62 digit, or -1 for any other character. */
const DIGIT = Int8Array.from({ length: 128 }, (_, code) => BASE62.indexOf(String.fromCharCode(code)));
const CODES = Uint8Array.from(BASE62, (c) => c.charCodeAt(0));
// A credential is built in this buffer, one byte per character (all ASCII), and read out as latin1.
const building = Buffer.alloc(CREDENTIAL_LENGTH);

/** A new credential of this kind. */
export function generateCredential(kind: CredentialKind): string {
  const prefix = CREDENTIAL_PREFIXES[kind];
  let crc = -1;
  for (let i = 0; i < PREFIX_LENGTH; i += 1) {
    building[i] = prefix.charCodeAt(i);
    crc = CRC_TABLE[(crc ^ building[i]!) & 0xff]! ^ (crc >>> 8);
  }
  // Uniform base62 characters: bytes of 248 and more are drawn again (248 = 4 × 62), so no character is likelier.
  for (let i = PREFIX_LENGTH; i < PREFIX_LENGTH + RANDOM_LENGTH; ) {
    const byte = randomByte();
    if (byte >= 248) continue;
    building[i] = CODES[byte % 62]!;
    crc = CRC_TABLE[(crc ^ building[i]!) & 0xff]! ^ (crc >>> 8);
    i += 1;
  }
  // The checksum in base62, most significant digit first, padded with '0'.
  let rest = (crc ^ -1) >>> 0;
  for (let i = CREDENTIAL_LENGTH - 1; i >= CREDENTIAL_LENGTH - CHECKSUM_LENGTH; i -= 1) {
    building[i] = CODES[rest % 62]!;
    rest = Math.floor(rest / 62);
  }
  return building.toString('latin1');
}

/** The kind each prefix's third and fourth characters name (sp··_). */
const KIND_OF_TAG: ReadonlyMap<string, CredentialKind> = new Map(KINDS.map((kind) => [CREDENTIAL_PREFIXES[kind].slice(2, 4), kind]));

/**
 * What a value is when it is one of ours — a prefix of ours, 49 base62 characters, the last 6 the
 * checksumOf the rest — else undefined. In one pass over its characters, without a regular
 * expression or a copy, as it runs for every credential presented (test/unit/credential-format.test.ts
 * holds it to the rule as written).
 */
export function credentialKind(value: string): CredentialKind | undefined {
  if (value.length !== CREDENTIAL_LENGTH || value.charCodeAt(0) !== 0x73 /* s */ || value.charCodeAt(1) !== 0x70 /* p */ || value.charCodeAt(4) !== 0x5f /* _ */) return undefined;
  const kind = KIND_OF_TAG.get(value.slice(2, 4));
  if (kind === undefined) return undefined;
  let crc = -1;
  for (let i = 0; i < PREFIX_LENGTH + RANDOM_LENGTH; i += 1) {
    const code = value.charCodeAt(i);
    if (i >= PREFIX_LENGTH && (code > 127 || DIGIT[code]! < 0)) return undefined;
    crc = CRC_TABLE[(crc ^ code) & 0xff]! ^ (crc >>> 8);
  }
  let stated = 0;
  for (let i = PREFIX_LENGTH + RANDOM_LENGTH; i < CREDENTIAL_LENGTH; i += 1) {
    const code = value.charCodeAt(i);
    const digit = code > 127 ? -1 : DIGIT[code]!;
    if (digit < 0) return undefined;
    stated = stated * 62 + digit;
  }
  return stated === (crc ^ -1) >>> 0 ? kind : undefined;
}

/** Whether a value starts with one of our prefixes (it then must be whole and of the right kind). */
export const hasOurPrefix = (value: string): boolean =>
  value.length >= PREFIX_LENGTH && value.charCodeAt(0) === 0x73 && value.charCodeAt(1) === 0x70 && value.charCodeAt(4) === 0x5f && KIND_OF_TAG.has(value.slice(2, 4));

/**
 * Whether a value presented as a credential of `kind` is refused without asking any store: it
 * carries one of our prefixes, but its checksum or length fails, or it is another kind (an access
 * token sent as a refresh token). A value without our prefix is not refused here: it may be a
 * credential issued before the prefixes (docs/credentials.md#older-credentials).
 */
export const refusedAs = (kind: CredentialKind, value: string): boolean => hasOurPrefix(value) && credentialKind(value) !== kind;

/**
 * A hint that identifies a credential to its owner without being usable: its prefix and last four
 * characters (the checksum's; as GitHub shows them), e.g. `spat_…x9Zq`.
 */
export const credentialHint = (value: string): string => `${value.slice(0, PREFIX_LENGTH)}…${value.slice(-4)}`;

/** The provider's token models and the kind of credential each issues. */
export const TOKEN_MODEL_KINDS = { AccessToken: 'access_token', RefreshToken: 'refresh_token', AuthorizationCode: 'authorization_code' } as const satisfies Record<string, CredentialKind>;
export type TokenModel = keyof typeof TOKEN_MODEL_KINDS;

/** The kind a provider model's ids are, or undefined for models that are not credentials (Grant, Session…). */
export const kindOfModel = (model: string): CredentialKind | undefined => (TOKEN_MODEL_KINDS as Record<string, CredentialKind>)[model];
