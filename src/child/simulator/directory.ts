// The simulator's stand-in for the wordpress.org directory, served at `${baseUrl}/__sim/dir/` with api.wordpress.org's
// info/1.2 shapes (plugin_information, theme_information, query_plugins, query_themes) and downloads.wordpress.org's
// link shape (plugin/SLUG.VERSION.zip), as the real-child kit's /__rc/dir/ is. Simulated sites "download" a package
// by its link: installplugintheme looks the link up here (no zip bytes are served or read).

export interface SimPackage {
  name: string;
  author: string;
  description: string;
  versions: string[];
  stable: string;
  requires_php: string | null;
  /** Themes: the parent theme of a child theme. */
  template?: string;
  /** The package installs nothing (its zip has no plugin header): the child's install fails. */
  broken?: boolean;
}

const p = (name: string, versions: string[], extra: Partial<SimPackage> = {}): SimPackage => ({
  name,
  author: 'Simulator',
  description: `${name}: a package of the simulator's directory.`,
  versions,
  stable: versions[versions.length - 1]!,
  requires_php: null,
  ...extra,
});

export const SIM_DIRECTORY: { plugins: Record<string, SimPackage>; themes: Record<string, SimPackage> } = {
  plugins: {
    'sim-delta': p('Sim Delta', ['1.0.0', '1.1.0']),
    'contact-form-lite': p('Contact Form Lite', ['2.0.0', '2.3.1'], { description: 'A small contact form plugin.' }),
    'contact-form-sim': p('Contact Form Sim', ['1.0.0'], { description: 'Another contact form plugin.' }),
    'form-builder-sim': p('Form Builder Sim', ['3.2.0'], { description: 'Drag-and-drop contact forms.' }),
    'sim-broken': p('Sim Broken', ['1.0.0'], { broken: true }),
  },
  themes: {
    'sim-nova': p('Sim Nova', ['1.0.0'], { requires_php: '7.4' }),
    'sim-nova-child': p('Sim Nova Child', ['1.0.0'], { template: 'sim-nova' }),
  },
};

const SLUG = /^[a-z0-9_-]+$/;

function entry(kind: 'plugins' | 'themes', slug: string, e: SimPackage, base: string, full: boolean): Record<string, unknown> {
  const type = kind === 'plugins' ? 'plugin' : 'theme';
  const link = (v: string) => `${base}${type}/${slug}.${v}.zip`;
  const versions = Object.fromEntries(e.versions.map((v) => [v, link(v)]));
  if (kind === 'plugins') {
    return {
      name: e.name,
      slug,
      version: e.stable,
      author: `<a href="https://sim.example/">${e.author}</a>`,
      requires: false,
      tested: '',
      requires_php: e.requires_php ?? false,
      rating: 90,
      num_ratings: 3,
      active_installs: 1000,
      short_description: e.description,
      download_link: link(e.stable),
      ...(full ? { sections: { description: `<p>${e.description}</p>` }, versions } : {}),
    };
  }
  return {
    name: e.name,
    slug,
    version: e.stable,
    author: { user_nicename: 'simulator', display_name: e.author, author: e.author },
    rating: 80,
    num_ratings: 2,
    ...(full ? { sections: { description: e.description }, versions } : { description: e.description }),
    download_link: link(e.stable),
    requires: false,
    requires_php: e.requires_php ?? false,
    ...(e.template ? { template: e.template, parent: { slug: e.template, name: e.template, homepage: '' } } : {}),
  };
}

/** An info/1.2 answer (`rest` is the path after /__sim/dir/), or null when the path is no API path. */
export function directoryAnswer(rest: string, query: URLSearchParams, base: string): { status: number; json: unknown } | null {
  const m = /^(plugins|themes)\/info\/1\.2\/?$/.exec(rest);
  if (!m) return null;
  const kind = m[1] as 'plugins' | 'themes';
  const type = kind === 'plugins' ? 'plugin' : 'theme';
  const all = SIM_DIRECTORY[kind];
  const action = query.get('action') ?? '';
  if (action === `${type}_information`) {
    const slug = query.get('request[slug]') ?? '';
    if (kind === 'plugins' && !SLUG.test(slug)) return { status: 404, json: { error: 'Invalid plugin slug.' } };
    if (!slug.trim()) return { status: 400, json: { error: 'Slug not provided' } };
    const e = Object.hasOwn(all, slug) ? all[slug] : undefined;
    if (!e) return { status: 404, json: { error: kind === 'plugins' ? 'Plugin not found.' : 'Theme not found' } };
    return { status: 200, json: entry(kind, slug, e, base, true) };
  }
  if (action === `query_${kind}`) {
    const search = (query.get('request[search]') ?? '').trim().toLowerCase();
    const found = Object.entries(all)
      .filter(([slug, e]) => search !== '' && (slug.includes(search) || e.name.toLowerCase().includes(search)))
      .map(([slug, e]) => entry(kind, slug, e, base, false));
    const per = Math.max(1, Number(query.get('request[per_page]') ?? 24) || 24);
    const page = Math.max(1, Number(query.get('request[page]') ?? 1) || 1);
    return {
      status: 200,
      json: {
        info: { page, pages: Math.ceil(found.length / per), results: found.length },
        [kind]: found.slice((page - 1) * per, page * per),
      },
    };
  }
  return { status: 400, json: { error: 'Action not implemented' } };
}

/** The directory package a download link names (…/__sim/dir/plugin/SLUG.VERSION.zip or SLUG.zip), or null. */
export function packageAt(url: string): { type: 'plugin' | 'theme'; slug: string; version: string; pkg: SimPackage } | null {
  let path: string;
  try {
    path = decodeURIComponent(new URL(url).pathname);
  } catch {
    return null;
  }
  const m = /\/__sim\/dir\/(plugin|theme)\/([a-z0-9_-]+)(?:\.([0-9][0-9A-Za-z.+_-]*))?\.zip$/.exec(path);
  if (!m) return null;
  const type = m[1] as 'plugin' | 'theme';
  const all = SIM_DIRECTORY[type === 'plugin' ? 'plugins' : 'themes'];
  const pkg = Object.hasOwn(all, m[2]!) ? all[m[2]!] : undefined;
  const version = m[3] ?? pkg?.stable;
  if (!pkg || !version || !pkg.versions.includes(version)) return null;
  return { type, slug: m[2]!, version, pkg };
}
