// The site list filter (issue 34): a tag filter or an include list that names a small part of the fleet is answered by
// looking at those sites only. Whatever the path, the answer is the one a look at every site gives, in list order.
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { closeServices, openServices, type Services } from '../src/domain/index.js';
import { siteStatus, type SiteFilter } from '../src/domain/sites.js';
import type { SiteRecord, TagRecord } from '../src/store/records.js';
import { naturalKey } from '../src/core/collate.js';
import { siteKey } from '../src/core/site-lookup.js';
import { tempDir } from './support/server.js';

let s: Services | undefined;
afterAll(async () => {
  if (s) await closeServices(s);
});

/** The filter's meaning, by a look at every site of the sorted list. */
function reference(all: SiteRecord[], f: SiteFilter, inTags: Set<number> | null): SiteRecord[] {
  const q = f.search?.trim().toLowerCase();
  return all.filter(
    (x) =>
      (!f.status || f.status === 'any' || siteStatus(x) === f.status) &&
      (!f.include?.length || f.include.includes(x.id)) &&
      (!f.exclude?.length || !f.exclude.includes(x.id)) &&
      (!inTags || inTags.has(x.id)) &&
      (f.client_id === undefined || x.client_id === f.client_id) &&
      (!q || String(x.id).includes(q) || x.name.toLowerCase().includes(q) || x.url.toLowerCase().includes(q)),
  );
}

it('answers a small tag or include list by its sites alone, exactly as a look at every site does, in list order', async () => {
  s = await openServices(loadConfig({ dataDir: tempDir() }, {}));
  const svc = s;
  const N = 400;
  // URLs that sort naturally (site2 before site10) and not by id, some suspended, some with a client.
  const ids = await svc.store.write((tx) =>
    Array.from({ length: N }, (_, i) => {
      const n = (i * 7919) % N;
      const rec = svc.sites.insert(tx, {
        url: `https://${i % 3 ? 'www.' : ''}site${n}.example.com/`,
        name: `${['Clinic', 'Bakery', 'Garage'][i % 3]} ${n}`,
        admin_username: 'admin',
      });
      return svc.sites.patch(tx, rec.id, { suspended: i % 5 === 0, client_id: i % 4 === 0 ? 1 : null }).id;
    }),
  );
  const tagOf = (k: number, every: number) => ids.filter((_, i) => i % every === k);
  const [small, large, byHand] = await svc.store.write((tx) => [
    tx.insert<TagRecord>('tags', { name: 'small', color: null, created_at: '', updated_at: '' }),
    tx.insert<TagRecord>('tags', { name: 'large', color: null, created_at: '', updated_at: '' }),
    tx.insert<TagRecord>('tags', { name: 'by hand', color: null, created_at: '', updated_at: '' }),
  ]);
  const members = new Map([
    [small!.id, tagOf(1, 25)],
    [large!.id, tagOf(0, 2)],
    [byHand!.id, tagOf(3, 40)],
  ]);
  await svc.store.write((tx) => {
    for (const id of ids) {
      const tag_ids = [...members].filter(([, m]) => m.includes(id)).map(([t]) => t);
      // The "by hand" tag's sites list their tags out of order and with a repeat (by hand, an older version): read alike.
      if (tag_ids.includes(byHand!.id)) tag_ids.reverse().push(tag_ids[0]!);
      if (tag_ids.length) tx.put<SiteRecord>('sites', { ...tx.get<SiteRecord>('sites', id)!, tag_ids });
    }
  });
  const all = svc.sites.filter({}, () => []);
  expect(all).toHaveLength(N);
  const tagSites = (t: number[]) => svc.tags.sitesInTags(t);
  // The sites of the tags, from their records (not from the service under test).
  const inTagsOf = (t: number[]) =>
    new Set([...svc.store.all<SiteRecord>('sites')].filter((x) => x.tag_ids?.some((id) => t.includes(id))).map((x) => x.id));
  const cases: SiteFilter[] = [
    { tag_ids: [small!.id] }, // 16 of 400: only they are looked at
    { tag_ids: [large!.id] }, // half the fleet: every site is looked at
    { tag_ids: [small!.id, large!.id] }, // overlapping: a site in both is listed once
    { tag_ids: [byHand!.id] },
    { tag_ids: [byHand!.id, small!.id], include: ids.slice(0, 200) },
    { include: [-1, 0, 2 ** 40, ids[5]!] },
    { include: [ids[7]!, ids[3]!, ids[7]!] }, // a site named twice is listed once
    { tag_ids: [large!.id], include: [ids[0]!, ids[2]!, ids[0]!] }, // the include list is the smaller: its sites are the candidates
    { tag_ids: [small!.id], search: 'clinic' },
    { tag_ids: [small!.id], status: 'suspended' },
    { tag_ids: [small!.id], client_id: 1 },
    { tag_ids: [small!.id], exclude: tagOf(1, 50) },
    { include: ids.slice(0, 30) },
    { include: [...ids.slice(0, 30), 999_999], tag_ids: [large!.id] },
    { include: ids.slice(0, 30), tag_ids: [small!.id] },
    { search: 'site1' },
    { search: 'site1', status: 'suspended' },
    { search: '  ', status: 'suspended' },
    { search: '' },
    { tag_ids: [999] },
  ];
  for (const f of cases) {
    const got = svc.sites.filter(f, tagSites).map((x) => x.id);
    const want = reference(all, f, f.tag_ids?.length ? inTagsOf(f.tag_ids) : null).map((x) => x.id);
    expect(got, JSON.stringify(f)).toEqual(want);
    // A page of it, and its count, without the whole list: the first, a middle one, the last (short), one past the end.
    for (const [from, count] of [
      [0, 7],
      [3, 10],
      [Math.max(0, want.length - 4), 10],
      [want.length + 5, 10],
    ] as const) {
      const p = svc.sites.page(f, tagSites, from, count);
      expect({ items: p.items.map((x) => x.id), total: p.total }, `${JSON.stringify(f)} from ${from}`).toEqual({
        items: want.slice(from, from + count),
        total: want.length,
      });
    }
  }
  expect(svc.sites.filter({ tag_ids: [small!.id] }, tagSites).length).toBe(16);
  // The tags' sites come ascending, each once, whatever order a list was written in.
  const union = tagSites([byHand!.id, small!.id, large!.id]);
  expect(union).toEqual([...inTagsOf([byHand!.id, small!.id, large!.id])].sort((a, b) => a - b));
});

it('keeps the list and the domain lookup up to every change: edits in place, a new URL, an added and a removed site', async () => {
  const t = await openServices(loadConfig({ dataDir: tempDir() }, {}));
  try {
    const N = 60;
    const ids = await t.store.write((tx) =>
      Array.from({ length: N }, (_, i) => t.sites.insert(tx, { url: `https://site${(i * 37) % N}.example.com/`, name: `S ${i}` }).id),
    );
    // The list's meaning: every record as stored now, by natural URL order then id.
    const want = () =>
      [...t.store.all<SiteRecord>('sites')]
        .map((x) => [naturalKey(siteKey(x.url)), x] as const)
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1].id - b[1].id))
        .map(([, x]) => x);
    // Searches by id, name (old and new ones: renames below), URL, any letter case; one holding the search texts'
    // separator (NUL) takes the fields one by one and finds nothing.
    const searches = ['renamed 1', 's 1', 'S 11', 'SITE1', 'aaa', String(ids[5]), '3', 'x\u0000y'];
    const check = (what: string) => {
      const got = t.sites.filter({}, () => []);
      expect(got, what).toEqual(want());
      for (const x of got) expect(t.sites.find(siteKey(x.url))?.id, what).toBe(x.id);
      for (const search of searches)
        expect(
          t.sites.filter({ search }, () => []),
          `${what}: ${search}`,
        ).toEqual(reference(want(), { search }, null));
    };
    check('built');
    const held = t.sites.filter({}, () => []);
    for (let k = 0; k < 5; k++) {
      await t.sites.edit(ids[(k * 11) % N]!, { notes: `edit ${k}`, name: `Renamed ${k}` });
      check(`edit ${k}`);
    }
    // An answer given before the edits is left as it was: the list is a new array, not the old one changed.
    expect(held.map((x) => x.notes)).toEqual(held.map(() => ''));
    await t.store.write((tx) => t.sites.patch(tx, ids[3]!, { url: 'https://aaa-first.example.com/' }));
    check('a new URL');
    expect(t.sites.filter({}, () => [])[0]!.id).toBe(ids[3]);
    await t.store.write((tx) => t.sites.insert(tx, { url: 'https://site7b.example.com/', name: 'new' }));
    check('an added site');
    await t.sites.remove(ids[10]!);
    check('a removed site');
    await t.sites.edit(ids[20]!, { notes: 'after the rebuilds' });
    check('an edit after the rebuilds');
    // Edits with only filtered answers between them (nobody holds the list itself): the list is changed in place,
    // and every answer is still the one a look at every site gives.
    for (let k = 0; k < 5; k++) {
      await t.sites.edit(ids[(k * 7 + 1) % N]!, k % 2 ? { notes: `in place ${k}` } : { name: `In place ${k}` });
      for (const search of [...searches, 'in place'])
        expect(
          t.sites.filter({ search }, () => []),
          `in place ${k}: ${search}`,
        ).toEqual(reference(want(), { search }, null));
      expect(t.sites.filter({ status: 'connected' }, () => [])).toEqual(reference(want(), { status: 'connected' }, null));
    }
    check('edited in place');
  } finally {
    await closeServices(t);
  }
});

it('takes added, removed and moved sites in at their places without sorting the fleet, up to 64 in one change', async () => {
  const t = await openServices(loadConfig({ dataDir: tempDir() }, {}));
  try {
    // Domains that collide: one URL twice, and site01 / site1 / www.site1 (one sort key, two domains and one alias).
    let x = 7;
    const rnd = (n: number) => ((x = (x * 1103515245 + 12345) % 2147483648), x % n);
    const urls = (k: number) =>
      [
        `https://site${k}.example.com/`,
        `https://site0${k}.example.com/`,
        `https://www.site${k}.example.com/`,
        `http://site${k}.example.com`,
      ][rnd(4)]!;
    await t.store.write((tx) => {
      for (let i = 0; i < 80; i++) t.sites.insert(tx, { url: urls(rnd(30)), name: `S ${i}` });
    });
    const want = () =>
      [...t.store.all<SiteRecord>('sites')]
        .map((s) => [naturalKey(siteKey(s.url)), s] as const)
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1].id - b[1].id))
        .map(([, s]) => s);
    // The domain lookup names the lowest id of the sites with that domain.
    const lookup = () => {
      const m = new Map<string, number>();
      for (const s of [...t.store.all<SiteRecord>('sites')].sort((a, b) => a.id - b.id))
        if (!m.has(siteKey(s.url))) m.set(siteKey(s.url), s.id);
      return m;
    };
    const check = (what: string) => {
      expect(
        t.sites.filter({}, () => []),
        what,
      ).toEqual(want());
      for (const [domain, id] of lookup()) expect(t.sites.find(domain)?.id, `${what}: ${domain}`).toBe(id);
      for (const search of ['site1', '0', 'S 7'])
        expect(
          t.sites.filter({ search }, () => []),
          what,
        ).toEqual(reference(want(), { search }, null));
    };
    check('built');
    const sorts = t.sites.sorts;
    // site01 sorts with site1 (one key) and between two site1s by id: the first site1 gone, the lookup finds the other.
    const [a, b] = await t.store.write((tx) =>
      ['https://site1.example.com/', 'https://site01.example.com/', 'https://www.site1.example.com/'].map(
        (url) => t.sites.insert(tx, { url }).id,
      ),
    );
    check('three of one key');
    await t.store.write((tx) => tx.delete('sites', a!));
    check('the first of one key removed');
    expect(t.sites.find('site1.example.com')?.id).not.toBe(b);
    let order = t.sites.order();
    for (let round = 0; round < 25; round++) {
      // Up to four changes in one write: adds, removes, new URLs and edits, on random sites.
      const live = [...t.store.all<SiteRecord>('sites')].map((s) => s.id);
      const picks = Array.from({ length: 1 + rnd(4) }, () => [rnd(4), live[rnd(live.length)]!] as const);
      const urlsNow = Array.from({ length: picks.length }, () => urls(rnd(30)));
      await t.store.write((tx) =>
        picks.forEach(([kind, id], i) => {
          if (!tx.get('sites', id)) return;
          if (kind === 0) t.sites.insert(tx, { url: urlsNow[i]!, name: `New ${round}` });
          else if (kind === 1) tx.delete('sites', id);
          else if (kind === 2) t.sites.patch(tx, id, { url: urlsNow[i]! });
          else t.sites.patch(tx, id, { name: `Edit ${round}` });
        }),
      );
      check(`round ${round}: ${JSON.stringify(picks)}`);
      if (picks.some(([kind]) => kind < 3)) expect(t.sites.order(), `round ${round}`).not.toBe(order);
      order = t.sites.order();
    }
    expect(t.sites.sorts).toBe(sorts);
    // Past 64 sites in one change, the fleet is sorted again.
    await t.store.write((tx) => {
      for (let i = 0; i < 65; i++) t.sites.insert(tx, { url: urls(rnd(30)), name: `Batch ${i}` });
    });
    check('a batch of 65');
    expect(t.sites.sorts).toBe(sorts + 1);
  } finally {
    await closeServices(t);
  }
});

it('keeps the completion indexes through edits and syncs, and builds them again for an added, removed, renamed or moved site', async () => {
  const t = await openServices(loadConfig({ dataDir: tempDir() }, {}));
  try {
    const ids = await t.store.write((tx) =>
      Array.from({ length: 40 }, (_, i) => t.sites.insert(tx, { url: `https://shop${i}.example.com/`, name: `Bakery ${i}` }).id),
    );
    // The answer's meaning: domains, then names, starting with the text, each by key then id; an id names itself.
    const want = (text: string, limit: number) => {
      const all = [...t.store.all<SiteRecord>('sites')];
      const by = (key: (s: SiteRecord) => string, p: string) =>
        all
          .filter((s) => key(s).startsWith(p))
          .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.id - b.id))
          .map((s) => s.id);
      const exact = /^\d+$/.test(text) && t.store.get('sites', Number(text)) ? [Number(text)] : [];
      const found = [
        ...new Set([...exact, ...by((s) => siteKey(s.url), siteKey(text)), ...by((s) => s.name.toLowerCase(), text.toLowerCase())]),
      ];
      return { ids: found.slice(0, limit), more: found.length > limit };
    };
    const check = (what: string) => {
      for (const [text, limit] of [
        ['shop1', 5],
        ['bakery 2', 20],
        ['renamed', 5],
        ['moved', 5],
        [String(ids[3]), 3],
      ] as const) {
        const got = t.sites.suggest(text, limit);
        expect({ ids: got.sites.map((s) => s.id), more: got.more }, `${what}: ${text}`).toEqual(want(text, limit));
      }
    };
    check('built');
    const builds = t.sites.prefixBuilds;
    for (let k = 0; k < 5; k++) await t.sites.edit(ids[k]!, { notes: `edit ${k}` });
    await t.store.write((tx) => t.sites.patch(tx, ids[6]!, { last_sync: new Date().toISOString(), wp_version: '6.9' }));
    check('edits and a sync');
    expect(t.sites.prefixBuilds).toBe(builds);
    await t.sites.edit(ids[7]!, { name: 'Renamed bakery' });
    check('a rename');
    await t.store.write((tx) => t.sites.patch(tx, ids[8]!, { url: 'https://moved.example.com/' }));
    check('a new URL');
    await t.store.write((tx) => t.sites.insert(tx, { url: 'https://shop100.example.com/', name: 'New' }));
    check('an added site');
    await t.sites.remove(ids[11]!);
    check('a removed site');
    expect(t.sites.prefixBuilds).toBe(builds + 4);
  } finally {
    await closeServices(t);
  }
});
