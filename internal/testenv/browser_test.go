package testenv

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func TestPNGStats(t *testing.T) {
	white := color.RGBA{255, 255, 255, 255}
	cases := []struct {
		name      string
		draw      func(img *image.RGBA)
		blank     bool
		minColour int
	}{
		{"blank", func(*image.RGBA) {}, true, 1},
		{"one line", func(img *image.RGBA) {
			for x := range 700 {
				img.Set(x, 350, color.Black)
			}
		}, true, 2},
		{"drawn", func(img *image.RGBA) {
			for y := range 700 {
				for x := range 700 {
					if (x/50+y/50)%3 == 0 {
						img.Set(x, y, color.RGBA{uint8(x / 3), uint8(y / 3), 90, 255})
					}
				}
			}
		}, false, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := image.NewRGBA(image.Rect(0, 0, 700, 700))
			for y := range 700 {
				for x := range 700 {
					img.Set(x, y, white)
				}
			}
			c.draw(img)
			var b bytes.Buffer
			if err := png.Encode(&b, img); err != nil {
				t.Fatal(err)
			}
			st, err := PNGStats(b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if blank := st.Colours < 8 || st.Ink < 0.01; blank != c.blank || st.Colours < c.minColour {
				t.Errorf("%+v: blank %v, want %v (at least %d colours)", st, blank, c.blank, c.minColour)
			}
			if st.Width != 700 || st.Height != 700 {
				t.Errorf("size %dx%d", st.Width, st.Height)
			}
		})
	}
	if _, err := PNGStats([]byte("not a png")); err == nil {
		t.Error("a non-PNG decoded")
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	b := &Browser{log: &tailBuffer{max: 1 << 10}}
	b.log.Write([]byte("start\n[1:2:ERROR:dbus/bus.cc:405] Failed to connect to the bus\ncrashed\n"))
	if got := b.LastLines(5); got != "start\ncrashed" {
		t.Errorf("browser lines %q keep the D-Bus noise or lose the rest", got)
	}
}
