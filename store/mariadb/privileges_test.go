package mariadb

import "testing"

func TestGrantExcess(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"GRANT USAGE ON *.* TO `app`@`%`", ""},
		{"GRANT SELECT, INSERT ON `quarry`.* TO `app`@`%`", ""},
		{"GRANT SELECT ON `quarry`.`quarry_c_kb` TO `app`@`%`", ""},
		{"GRANT ALL PRIVILEGES ON *.* TO `quarry`@`%` WITH GRANT OPTION", "ALL PRIVILEGES on every database (*.*)"},
		{"GRANT FILE ON *.* TO `app`@`%`", "FILE on every database (*.*)"},
		{"GRANT SELECT ON `mysql`.* TO `app`@`%`", "SELECT on mysql.*"},
	} {
		if got := grantExcess(tt.line, "quarry"); got != tt.want {
			t.Errorf("grantExcess(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
