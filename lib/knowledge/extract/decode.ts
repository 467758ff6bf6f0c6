// Everything becomes UTF-8: byte-order marks first, then strict UTF-8, then a detected legacy encoding.
import chardet from 'chardet';

function decodeWith(encoding: string, bytes: Uint8Array): string | null {
  try {
    return new TextDecoder(encoding, { fatal: false }).decode(bytes);
  } catch {
    return null;
  }
}

export function decodeText(bytes: Uint8Array): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8').decode(bytes.subarray(3));
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // not UTF-8
  }
  const guess = chardet.detect(bytes.subarray(0, 256 * 1024));
  if (guess) {
    const text = decodeWith(guess.toLowerCase() === 'iso-8859-1' ? 'windows-1252' : guess, bytes);
    if (text !== null) return text;
  }
  return new TextDecoder('windows-1252').decode(bytes);
}
