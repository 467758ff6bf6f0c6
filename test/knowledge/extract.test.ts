import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { Extractor } from '../../lib/knowledge/extract/extractor.ts';
import { ExtractionError } from '../../lib/knowledge/extract/types.ts';
import { decodeText } from '../../lib/knowledge/extract/decode.ts';
import { htmlToText } from '../../lib/knowledge/extract/html.ts';
import { makeDocx, makePdf, makePptx, makeXlsx, makeZipBomb } from './helpers/documents.ts';

const enc = (s: string) => new TextEncoder().encode(s);

async function rejection(p: Promise<unknown>): Promise<ExtractionError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ExtractionError, `expected ExtractionError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

describe('extraction in the worker', () => {
  const extractor = new Extractor({ limits: { maxDecompressedBytes: 5 * 1024 * 1024, maxPages: 50 } });
  after(() => extractor.close());

  test('plain text types', async () => {
    const md = await extractor.extract({ bytes: enc('# Title\n\nSome *markdown*.'), name: 'a.md', mimeType: 'text/markdown' });
    assert.equal(md.format, 'markdown');
    assert.match(md.text, /Some \*markdown\*/);
    const csv = await extractor.extract({ bytes: enc('a,b\n1,2\n'), name: 'data.csv', mimeType: '' });
    assert.equal(csv.format, 'csv');
    const json = await extractor.extract({ bytes: enc('{"k":[1,2]}'), name: 'x.json', mimeType: 'application/json' });
    assert.equal(json.text, '{\n  "k": [\n    1,\n    2\n  ]\n}');
    const xml = await extractor.extract({ bytes: enc('<r><a>Alpha</a><b><![CDATA[Beta]]></b></r>'), name: 'x.xml', mimeType: 'application/xml' });
    assert.equal(xml.text, 'Alpha\nBeta');
  });

  test('HTML keeps the main content and drops navigation chrome', async () => {
    const html = `<html><head><title>Guide</title><style>.x{}</style></head><body>
      <header>Site header</header><nav><a href="/">Home</a> <a href="/about">About</a></nav>
      <main><h1>Photosynthesis</h1><p>Plants turn light into sugar.</p><ul><li>Chlorophyll</li></ul>
      <div hidden>secret</div><script>alert(1)</script></main>
      <aside>Related links</aside><footer>© Footer</footer></body></html>`;
    const r = await extractor.extract({ bytes: enc(html), name: 'page.html', mimeType: 'text/html' });
    assert.match(r.text, /# Photosynthesis/);
    assert.match(r.text, /Plants turn light into sugar\./);
    assert.match(r.text, /- Chlorophyll/);
    for (const chrome of ['Site header', 'Home', 'Related links', 'Footer', 'alert', 'secret']) assert.doesNotMatch(r.text, new RegExp(chrome));
    assert.match(htmlToText('<body><p>No main here</p><nav>menu</nav></body>'), /^No main here$/);
  });

  test('PDF, DOCX, PPTX and XLSX', async () => {
    const pdf = await extractor.extract({
      bytes: await makePdf([['The mitochondria is the powerhouse.'], ['Second page text.']]),
      name: 'bio.pdf',
      mimeType: 'application/pdf',
    });
    assert.equal(pdf.format, 'pdf');
    assert.equal(pdf.pages, 2);
    assert.match(pdf.text, /powerhouse/);
    assert.match(pdf.text, /Second page text/);
    const docx = await extractor.extract({ bytes: makeDocx(['First paragraph.', 'Zweiter Absatz mit Umlauten: äöü.']), name: 'notes.docx', mimeType: '' });
    assert.match(docx.text, /First paragraph\./);
    assert.match(docx.text, /äöü/);
    const pptx = await extractor.extract({ bytes: makePptx([['Intro slide'], ['Details', 'More details']]), name: 'deck.pptx', mimeType: '' });
    assert.equal(pptx.pages, 2);
    assert.ok(pptx.text.indexOf('Intro slide') < pptx.text.indexOf('Details'), 'slides in presentation order');
    assert.match(pptx.text, /## Slide 2\n\nDetails\nMore details/);
    const xlsx = await extractor.extract({
      bytes: makeXlsx([
        {
          name: 'Grades',
          rows: [
            ['Name', 'Score'],
            ['Ada', 97],
            ['Linus', 88],
          ],
        },
      ]),
      name: 'grades.xlsx',
      mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    });
    assert.match(xlsx.text, /## Sheet: Grades/);
    assert.match(xlsx.text, /Ada \| 97/);
  });

  test('broken and unsupported files give clear errors', async () => {
    const broken = await rejection(extractor.extract({ bytes: enc('this is not a zip'), name: 'broken.docx', mimeType: '' }));
    assert.equal(broken.kind, 'broken');
    assert.match(broken.message, /not a valid Office document/);
    const brokenPdf = await rejection(extractor.extract({ bytes: enc('%PDF-1.7 garbage garbage'), name: 'x.pdf', mimeType: 'application/pdf' }));
    assert.equal(brokenPdf.kind, 'broken');
    const bin = await rejection(extractor.extract({ bytes: new Uint8Array([0, 1, 2, 3]), name: 'program.exe', mimeType: 'application/octet-stream' }));
    assert.equal(bin.kind, 'unsupported');
  });

  test('a zip bomb stops at the decompressed-size budget', async () => {
    const bomb = makeZipBomb(40);
    assert.ok(bomb.length < 200_000);
    const err = await rejection(extractor.extract({ bytes: bomb, name: 'bomb.docx', mimeType: '' }));
    assert.equal(err.kind, 'limit');
    assert.match(err.message, /expands to more than 5 MB/);
  });

  test('too many pages are refused', async () => {
    const many = await makePdf(Array.from({ length: 51 }, (_, i) => [`page ${i}`]));
    const err = await rejection(extractor.extract({ bytes: many, name: 'long.pdf', mimeType: 'application/pdf' }));
    assert.equal(err.kind, 'limit');
  });

  test('images are transcoded for vision models, pixel bombs refused', async () => {
    const webp = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#3366ff' } })
      .webp()
      .toBuffer();
    const same = await extractor.transcodeImage(new Uint8Array(webp));
    assert.equal(same.mimeType, 'image/webp');
    const tiff = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#3366ff' } })
      .tiff()
      .toBuffer();
    const png = await extractor.transcodeImage(new Uint8Array(tiff));
    assert.equal(png.mimeType, 'image/png');
    assert.equal((await sharp(png.bytes).metadata()).format, 'png');
    const large = await sharp({ create: { width: 3000, height: 1000, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const scaled = await extractor.transcodeImage(new Uint8Array(large));
    assert.equal(scaled.width, 2048);
    const small = new Extractor({ limits: { maxPixels: 1000 } });
    try {
      const err = await rejection(small.transcodeImage(new Uint8Array(large)));
      assert.equal(err.kind, 'limit');
    } finally {
      await small.close();
    }
  });

  test('a task over the deadline is stopped and the pool recovers', async () => {
    const slow = new Extractor({ limits: { timeoutMs: 1 } });
    try {
      const err = await rejection(slow.extract({ bytes: await makePdf([['x']]), name: 'x.pdf', mimeType: 'application/pdf' }));
      assert.equal(err.kind, 'timeout');
    } finally {
      await slow.close();
    }
    const r = await extractor.extract({ bytes: enc('still works'), name: 'a.txt', mimeType: 'text/plain' });
    assert.equal(r.text, 'still works');
  });
});

test('text is normalised to UTF-8 from BOMs and legacy encodings', () => {
  assert.equal(decodeText(new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69])), 'hi');
  assert.equal(decodeText(new Uint8Array([0xff, 0xfe, 0x68, 0x00, 0xe4, 0x00])), 'hä');
  assert.equal(decodeText(new Uint8Array([0xfe, 0xff, 0x00, 0x68, 0x00, 0xe4])), 'hä');
  const latin1 = new Uint8Array([
    ...new TextEncoder().encode('Gr'),
    0xfc,
    ...new TextEncoder().encode('n und sch'),
    0xf6,
    ...new TextEncoder().encode('n, sagte der B'),
    0xe4,
    ...new TextEncoder().encode('r.'),
  ]);
  assert.equal(decodeText(latin1), 'Grün und schön, sagte der Bär.');
});
