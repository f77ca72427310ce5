// The language switcher: a menu in mdBook's menu bar that opens the page
// being read, at the section being read, in the book's other editions.
//
// Every edition is built from the same file names (docs/src/x.md,
// docs/zh/x.md, docs/ja/x.md), English into the site's root and each
// translation into a directory of its own (target/book/zh/). So the same
// page in another edition is the site's root, that edition's directory,
// and the page's path inside its book; translated headings keep the
// English ids ({#the-id}), so the #fragment lands on the same section.
// Only relative URLs are built, so the site works from any prefix and
// from file://.
//
// `cargo xtask check` makes sure EDITIONS lists every edition of
// xtask/src/i18n.rs; `cargo xtask docs` makes sure every page loads this.
(function () {
  'use strict';

  // lang: what mdBook writes into <html lang> (book.language);
  // dir: where the edition is, relative to the site's root.
  const EDITIONS = [
    { lang: 'en', dir: '', label: 'English' },
    { lang: 'zh-CN', dir: 'zh/', label: '中文' },
    { lang: 'ja', dir: 'ja/', label: '日本語' },
  ];

  // Pages only the translations have (their glossaries): from one of
  // them, English opens its book's first page instead.
  const NOT_IN_ENGLISH = ['glossary.html'];

  const bar = document.querySelector('#mdbook-menu-bar .right-buttons');
  // mdBook sets path_to_root on every page: from this page to its book's root.
  if (!bar || typeof path_to_root !== 'string') {
    return;
  }
  const current =
    EDITIONS.find((e) => e.lang === document.documentElement.lang) || EDITIONS[0];

  // The URL of `edition`'s copy of this page, with the current #fragment.
  function counterpart(edition) {
    const here = new URL(window.location.href);
    here.hash = '';
    here.search = '';
    // "" means this page's own directory; new URL("", here) would be the page.
    const bookRoot = new URL(path_to_root || './', here);
    let page = here.href.startsWith(bookRoot.href) ? here.href.slice(bookRoot.href.length) : '';
    if (page === '' || (edition.dir === '' && NOT_IN_ENGLISH.includes(page))) {
      page = 'index.html';
    }
    const up = '../'.repeat(current.dir.split('/').length - 1);
    const siteRoot = new URL(up, bookRoot);
    return new URL(edition.dir + page, siteRoot).href + window.location.hash;
  }

  const button = document.createElement('button');
  button.id = 'i18n-toggle';
  button.type = 'button';
  button.className = 'icon-button';
  button.title = 'Language / 语言 / 言語';
  button.setAttribute('aria-label', 'Language');
  button.setAttribute('aria-haspopup', 'true');
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-controls', 'i18n-list');
  button.textContent = current.label;

  const list = document.createElement('ul');
  list.id = 'i18n-list';
  list.className = 'i18n-popup';
  list.setAttribute('role', 'menu');
  list.hidden = true;
  const links = EDITIONS.map((edition) => {
    const item = document.createElement('li');
    item.setAttribute('role', 'none');
    const link = document.createElement('a');
    link.setAttribute('role', 'menuitem');
    link.lang = edition.lang;
    link.hreflang = edition.lang;
    link.textContent = edition.label;
    link.href = counterpart(edition);
    if (edition === current) {
      link.setAttribute('aria-current', 'page');
    }
    item.appendChild(link);
    list.appendChild(item);
    return { edition, link };
  });

  // The fragment changes as the reader follows links within the page.
  function refresh() {
    links.forEach(({ edition, link }) => {
      link.href = counterpart(edition);
    });
  }
  window.addEventListener('hashchange', refresh);

  function show(open) {
    list.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    if (open) {
      refresh();
    }
  }
  button.addEventListener('click', (event) => {
    event.stopPropagation();
    show(list.hidden);
  });
  document.addEventListener('click', (event) => {
    if (!list.contains(event.target)) {
      show(false);
    }
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      show(false);
    }
  });

  const wrapper = document.createElement('div');
  wrapper.className = 'i18n-switcher';
  wrapper.appendChild(button);
  wrapper.appendChild(list);
  bar.insertBefore(wrapper, bar.firstChild);
})();
