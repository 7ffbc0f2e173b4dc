package main

import "testing"

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\there\nand\r\nthere", "tab here and  there"},
		{"bell\a and del\x7f", "bell and del"},
		{"\x1b[1;31mred\x1b[0m", "red"},        // CSI with parameters
		{"\x1b[?25lhidden", "hidden"},          // CSI with a private parameter
		{"\x1b(Bascii", "ascii"},               // ESC, intermediate byte, final byte
		{"\x1b7saved\x1b8", "saved"},           // ESC and a final byte alone
		{"\x1b]0;title\atext", "text"},         // OSC ended by BEL
		{"\x1b]8;;http://x\x1b\\link", "link"}, // OSC ended by ESC \
		{"\x1bPdevice\u009cafter", "after"},    // DCS ended by ST
		{"\u009b2Jcleared", "cleared"},         // C1 CSI
		{"\u009dunterminated", ""},             // a control string runs to the end
		{"cut\x1b", "cut"},                     // a lone ESC at the end
		{"cut\x1b[12", "cut"},                  // a sequence without its final byte
		{"caf\u00e9 \u0085next", "café  next"}, // NEL is a line break
		{"bad \xff byte", "bad \ufffd byte"},   // invalid UTF-8
		{"\x1b[\x1b[31mtwo", "two"},            // an ESC ends the sequence before it
		{"\x1b\x7fx", "x"},                     // DEL after ESC is dropped on its own
	} {
		if got := terminalSafe(tc.in); got != tc.want {
			t.Errorf("terminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
