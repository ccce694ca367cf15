{
  "locals": {}
}
