// Package i18n owns the console's languages: which ones it speaks
// (English, the fallback, and Simplified Chinese), how a request's
// language is chosen (?lang=, the lang cookie, the account's preference,
// Accept-Language), and the message catalogs every user-facing string is
// printed from. A Locale travels in the request context so that templates
// call T(ctx, key, args...) and get the text in the viewer's language,
// with numbers, plurals and times formatted for it. It is a leaf: it
// imports only golang.org/x/text and the standard library.
package i18n
