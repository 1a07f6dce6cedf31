package views

import (
	"context"
	"time"

	"github.com/casebook/casebook/internal/route"
)

// Nav entries of the top bar.
const (
	NavOverview  = "overview"
	NavIncidents = "incidents"
	NavKnowledge = "knowledge"
	NavAccuracy  = "accuracy"
	NavFaults    = "faults"
	NavStorage   = "storage"
	NavAdmin     = "admin"
)

// Assets holds the versioned URLs of the stylesheet and script.
type Assets struct {
	CSS string
	JS  string
}

// Banner is a page-wide notice, such as a failing data source.
type Banner struct {
	Status Status
	// Msg, when set, is the catalog key the banner prints with Args;
	// Text is shown as it is otherwise.
	Msg   string
	Args  []any
	Text  string
	Since time.Time // zero when not known
	Now   time.Time
}

// TextIn is the banner's text in the request's language.
func (b Banner) TextIn(ctx context.Context) string {
	if b.Msg != "" {
		return T(ctx, b.Msg, b.Args...)
	}
	return b.Text
}

// LayoutView is the view model of the page frame every page shares.
type LayoutView struct {
	Title      string // page title, without the product name
	Nav        string // the active Nav entry, "" for none
	Assets     Assets
	Banners    []Banner
	ShowFaults bool // show the demo fault panel in the nav
	// Refresh enables the script's live refresh of elements marked
	// data-refresh (only meaningful for relative time ranges).
	Refresh bool
	// Card, when set, is the link preview chat tools show for the page.
	Card *Card
}

// Card is what Slack, Teams, Feishu and other chat tools show when a link
// to the page is pasted: its Open Graph and Twitter-card tags. URLs are
// absolute, as crawlers need them.
type Card struct {
	Title       string
	Description string
	URL         string
	// Image is the preview picture's URL ("" for none); ImageAlt says what
	// it shows.
	Image    string
	ImageAlt string
}

// TwitterCard is the Twitter-card kind: a large image when there is one.
func (c Card) TwitterCard() string {
	if c.Image != "" {
		return "summary_large_image"
	}
	return "summary"
}

// FullTitle is the document title.
func (l LayoutView) FullTitle() string {
	if l.Title == "" {
		return "Casebook"
	}
	return l.Title + " · Casebook"
}

// navLink is one entry of the top bar; Label is its catalog key.
type navLink struct {
	Key, Label, Href string
}

func (l LayoutView) navLinks() []navLink {
	links := []navLink{
		{NavOverview, "nav.overview", route.URL(route.Overview)},
		{NavIncidents, "nav.incidents", route.URL(route.IncidentList)},
		{NavKnowledge, "nav.knowledge", route.URL(route.KBList)},
		{NavAccuracy, "nav.accuracy", route.URL(route.Accuracy)},
		{NavStorage, "nav.storage", route.URL(route.Storage)},
	}
	if l.ShowFaults {
		links = append(links, navLink{NavFaults, "nav.faults", route.URL(route.Faults)})
	}
	return links
}

func (l LayoutView) navClass(key string) string {
	if key == l.Nav {
		return "active"
	}
	return ""
}
