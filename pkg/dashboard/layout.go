package dashboard

import "time"

// writeHead writes what both pages share up to their content: the document head (title,
// stylesheet, script, the no-JavaScript reload), the header with the page's subtitle and the
// opening of the meta line, whose data-time the script uses to show the report's age.
func writeHead(w htmlWriter, subtitle string, refreshSeconds, noScriptReload int, generatedAt time.Time) {
	w.raw("<!DOCTYPE html>\n" +
		"<html lang=\"en\" class=\"no-js\">\n" +
		"<head>\n" +
		"<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		"<title>adc · ")
	w.text(subtitle)
	w.raw("</title>\n" +
		"<link rel=\"stylesheet\" href=\"" + StaticPath + "dashboard.css\">\n" +
		"<noscript><meta http-equiv=\"refresh\" content=\"")
	w.int(noScriptReload)
	w.raw("\"></noscript>\n" +
		"<script src=\"" + StaticPath + "dashboard.js\" defer></script>\n" +
		"</head>\n" +
		"<body data-refresh-seconds=\"")
	w.int(refreshSeconds)
	w.raw("\">\n" +
		"<header class=\"top\">\n" +
		"  <h1>adc <span class=\"sub\">")
	w.text(subtitle)
	w.raw("</span></h1>\n" +
		"  <p class=\"live\"><span id=\"refresh-status\" class=\"js-only\">live</span><noscript>reloads every ")
	w.int(noScriptReload)
	w.raw(" s</noscript></p>\n" +
		"</header>\n" +
		"<main id=\"content\">\n" +
		"  <p class=\"meta\" id=\"generated-at\" data-time=\"")
	w.text(rfc3339(generatedAt))
	w.raw("\">\n")
}

// writeFooter closes the content and writes the footer's links: the other page, its JSON
// and the metrics.
func writeFooter(w htmlWriter, otherPath, otherLabel, jsonPath string) {
	w.raw("</main>\n<footer><a href=\"")
	w.href(otherPath)
	w.raw("\">")
	w.text(otherLabel)
	w.raw("</a> · <a href=\"")
	w.href(jsonPath)
	w.raw("\">JSON</a> · <a href=\"/metrics\">metrics</a> · read-only</footer>\n</body>\n</html>\n")
}
