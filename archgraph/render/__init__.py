"""Presentation: text tables and JSON documents built from pass results.  Only this
package and the CLI know about formatting."""
