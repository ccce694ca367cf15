output {
  value = 1
}
