module github.com/assetregistry/registry/sdk

go 1.26.0

require (
	github.com/peterbourgon/ff/v3 v3.4.0
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/mod v0.41.0
	golang.org/x/oauth2 v0.37.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/skip2/go-qrcode v0.0.0-20200617195104-da1b6568686e // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/term v0.44.0 // indirect
)
