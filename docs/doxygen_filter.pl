#!/usr/bin/perl
# Doxygen's INPUT_FILTER for sluice's headers (docs/Doxyfile). The headers comment in Abseil's
# style, with plain //, which Doxygen does not read. This prints each header with:
#  - a comment that starts a line as a /// block (the declaration after it is documented);
#  - a comment after a member or enumerator ("int x = 0;  // why") as ///<;
#  - in those comments, outside `code spans` and "quotes" (which Doxygen keeps as they are),
#    the characters Doxygen reads as commands, links or HTML (\ @ < > & # ::) escaped, so that
#    <log_dir>/train is text, not a tag. A code span that goes on to the next line is closed at
#    the line's end and opened again there.
# Line numbers are kept, so Doxygen's messages point at the header's own lines.
use strict;
use warnings;

my $open_span = 0;  # the previous comment line ended inside a `code span`

sub escape_text {
  my ($text) = @_;
  $text = "`$text" if $open_span;
  my $ticks = () = $text =~ /`/g;
  $open_span = $ticks % 2;
  $text .= '`' if $open_span;
  my @parts = split /(`[^`]*`|"[^"]*")/, $text;
  for my $part (@parts) {
    next if $part =~ /^[`"]/;
    $part =~ s/([\\@<>&#])/\\$1/g;
    $part =~ s/::/\\::/g;
  }
  return join '', @parts;
}

while (my $line = <>) {
  chomp $line;
  if ($line =~ m{^(\s*)//(?!/)(.*)$}) {
    $line = "$1///" . escape_text($2);
  } elsif ($line =~ m{^(\s*[^#\s].*?[;,])(\s+)//(?!/)(.*)$}) {
    $open_span = 0;
    $line = "$1$2///<" . escape_text($3);
    $open_span = 0;
  } else {
    $open_span = 0;
  }
  print "$line\n";
}
