output "x" {
  value = "a"
}
