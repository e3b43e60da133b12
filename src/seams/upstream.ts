// What a seam relies on of a library's unpublished insides: the library's files it was checked
// against, by sha256 (test/unit/seam-fingerprints.test.ts names any that an upgrade changed).
export interface UpstreamFile {
  /** The file, from node_modules: `<package>/<path>`. */
  file: string;
  sha256: string;
  /** What of it the seam relies on. */
  what: string;
}
